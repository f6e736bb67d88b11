"""Remotes when things go wrong: two machines pushing at once, a push killed midway or
after the remote took it, a damaged pack on the remote, a remote rewritten by force."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pygit2
import pytest
from remote_servers import GitHttp, Machine, bare_repo, git, git_daemon, wait_for


def remote_refs(bare: Path) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/rewind/", cwd=bare)
    return dict(line.split() for line in out.splitlines())


def mirror_refs(machine: Machine) -> dict[str, str]:
    repo = pygit2.Repository(str(machine.store))
    return {r: str(repo.references[r].target) for r in repo.references
            if r.startswith("refs/rewind/remotes/")}


def local_refs(machine: Machine) -> dict[str, str]:
    repo = pygit2.Repository(str(machine.store))
    return {r: str(repo.references[r].target) for r in repo.references
            if not r.startswith("refs/rewind/remotes/")}


def fsck(bare: Path) -> None:
    git("fsck", "--strict", "--no-dangling", cwd=bare)


def project(root: Path, name: str = "app", files: dict[str, bytes] | None = None) -> Path:
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    (path / ".git").mkdir(exist_ok=True)
    for rel, data in (files or {"main.py": b"print(1)\n"}).items():
        (path / rel).write_bytes(data)
    return path


def test_two_machines_push_the_same_path_at_once(tmp_path: Path):
    """Two sandboxes checkpoint the same path and push at the same moment: both land, in
    their own folders, and a third machine sees both."""
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    a, b, c = (Machine(tmp_path, n) for n in "abc")
    app = project(tmp_path / "work")
    with GitHttp(served, "u", "p") as server:
        url = server.url("r.git")
        for m in (a, b, c):
            m.use_credentials(f"http://u:p@127.0.0.1:{server.port}")
            m.rewind("remote", "add", "origin", url)
        for m, text in ((a, b"from a\n"), (b, b"from b\n")):
            (app / "main.py").write_bytes(text)
            m.rewind("checkpoint", app, "-m", f"by {m.name}")
        server.hold_pushes = 2  # neither push goes on before both are in flight
        pushes = [m.start("push", "origin", "-C", app) for m in (a, b)]
        wait_for("both pushes in flight at once", lambda: server.in_flight() == 2)
        for proc in pushes:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            assert "pushed 1 checkpoint(s)" in out
        refs = remote_refs(bare)
        machines = {ref.split("/")[3] for ref in refs}
        assert len(machines) == 2, refs
        fsck(bare)
        c.rewind("fetch", "origin")
    repo = pygit2.Repository(str(c.store))
    reasons = sorted(repo.references[r].peel(pygit2.Commit).message.split("\n")[0]
                     for r in repo.references if r.endswith("/checkpoints"))
    assert reasons == ["by a", "by b"]


@pytest.mark.long
def test_push_killed_while_sending(tmp_path: Path):
    """SIGKILL to the pushing process group while the remote is receiving the pack: the
    remote keeps none of it and stays consistent; the next push completes."""
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    a, b = Machine(tmp_path, "a"), Machine(tmp_path, "b")
    app = project(tmp_path / "work", files={f"big{i}.bin": os.urandom(8 << 20) for i in range(5)})
    a.rewind("checkpoint", app, timeout=300)
    log = tmp_path / "daemon.log"
    with git_daemon(served, log) as prefix:
        a.rewind("remote", "add", "origin", prefix + "r.git")
        proc = a.start("push", "origin", "-C", app)
        incoming = wait_for("the remote receiving the pack",
                            lambda: list((bare / "objects").glob("*incoming-*")), step=0.002)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        assert incoming, "killed before the remote started receiving"
        # git leaves the quarantine folder behind (never looked at: not an object store);
        # the receiving end says when it gave up.
        wait_for("the remote to give up on the push", lambda: "hung up" in log.read_text(),
                 timeout=60)
        assert not remote_refs(bare), "a half-sent push moved refs on the remote"
        fsck(bare)
        assert not mirror_refs(a)
        pushed = a.rewind("push", "origin", "-C", app, timeout=300)
        assert "pushed 1 checkpoint(s)" in pushed.stdout
        fsck(bare)
        b.rewind("remote", "add", "origin", prefix + "r.git")
        b.rewind("fetch", "origin", timeout=300)
    assert mirror_refs(b) and set(mirror_refs(b).values()) == set(remote_refs(bare).values())


def test_push_killed_after_the_remote_took_it(tmp_path: Path):
    """The remote moved its refs but the pusher died before recording it: the next push
    finds its own copies there and sends only what is new."""
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    a = Machine(tmp_path, "a")
    app = project(tmp_path / "work")
    a.rewind("checkpoint", app, "-m", "one")
    with GitHttp(served, "u", "p") as server:
        a.use_credentials(f"http://u:p@127.0.0.1:{server.port}")
        a.rewind("remote", "add", "origin", server.url("r.git"))
        server.gate = threading.Event()
        proc = a.start("push", "origin", "-C", app)
        wait_for("the push request at the server", lambda: server.in_flight() == 1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        server.gate.set()  # the server now applies the request the dead client sent
        wait_for("the remote to take the push", lambda: remote_refs(bare), timeout=60)
        assert not mirror_refs(a), "the killed push recorded what it sent"
        server.gate = None
        (app / "main.py").write_text("print(2)\n")
        a.rewind("checkpoint", app, "-m", "two")
        pushed = a.rewind("push", "origin", "-C", app)
    assert "pushed 1 checkpoint(s)" in pushed.stdout, pushed.stdout
    fsck(bare)
    chain = next(r for r in remote_refs(bare) if r.endswith("/checkpoints"))
    log = git("log", "--format=%s", chain, cwd=bare).split()
    assert log == ["two", "one"], log  # each checkpoint once: the copy was not sent again
    assert mirror_refs(a) == {f"refs/rewind/remotes/origin/{r[len('refs/rewind/'):]}": v
                              for r, v in remote_refs(bare).items()}


def test_fetch_from_a_damaged_remote_changes_nothing(tmp_path: Path):
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    a, b = Machine(tmp_path, "a"), Machine(tmp_path, "b")
    app = project(tmp_path / "work")
    a.rewind("checkpoint", app, "-m", "one")
    a.rewind("remote", "add", "origin", f"file://{bare}")
    a.rewind("push", "origin", "-C", app)
    b.rewind("remote", "add", "origin", f"file://{bare}")
    b.rewind("fetch", "origin")
    (app / "data.bin").write_bytes(os.urandom(64 << 10))
    a.rewind("checkpoint", app, "-m", "two")
    a.rewind("push", "origin", "-C", app)
    git("repack", "-adq", cwd=bare)
    blob = git("rev-parse", f"{next(r for r in remote_refs(bare) if r.endswith('checkpoints'))}"
               ":data.bin", cwd=bare).strip()
    pack = next((bare / "objects" / "pack").glob("*.pack"))
    offsets = {line.split()[0]: int(line.split()[4])
               for line in git("verify-pack", "-v", str(pack.with_suffix(".idx")),
                               check=False).splitlines() if len(line.split()) >= 5}
    data = bytearray(pack.read_bytes())
    at = offsets[blob] + 4096  # inside the blob's deflated bytes
    data[at:at + 16] = bytes(b ^ 0xFF for b in data[at:at + 16])
    os.chmod(pack, 0o644)
    pack.write_bytes(bytes(data))

    before = (local_refs(b), mirror_refs(b), sorted(p.name for p in
                                                     (b.store / "objects").rglob("*")))
    failed = b.rewind("fetch", "origin", check=False)
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    assert failed.stderr.startswith("rewind: fetch from origin failed: "), failed.stderr
    assert "Traceback" not in failed.stderr
    after = (local_refs(b), mirror_refs(b), sorted(p.name for p in
                                                    (b.store / "objects").rglob("*")))
    assert after == before


def test_force_rewritten_remote_never_loses_local_history(tmp_path: Path):
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    a, b = Machine(tmp_path, "a"), Machine(tmp_path, "b")
    app = project(tmp_path / "work")
    for n in range(3):
        (app / "main.py").write_text(f"print({n})\n")
        a.rewind("checkpoint", app, "-m", f"cp{n}")
    a.rewind("remote", "add", "origin", str(bare))
    a.rewind("push", "origin", "--all-projects")
    b.rewind("remote", "add", "origin", str(bare))
    b.rewind("fetch", "origin")
    history = a.rewind("list", app, "--json").stdout
    mine = local_refs(a)

    # Someone else rewrites the remote: every checkpoint ref replaced or deleted.
    work = tmp_path / "vandal"
    git("init", "-q", str(work))
    (work / "junk").write_text("junk\n")
    git("add", "junk", cwd=work)
    git("-c", "user.name=v", "-c", "user.email=v@v", "commit", "-qm", "rewritten", cwd=work)
    refs = remote_refs(bare)
    chain = next(r for r in refs if r.endswith("/checkpoints"))
    git("push", "-q", "--force", str(bare), f"HEAD:{chain}", cwd=work)
    for ref in refs:
        if ref != chain:
            git("update-ref", "-d", ref, cwd=bare)

    fetched = a.rewind("fetch", "origin")
    assert "updated" in fetched.stdout
    assert local_refs(a) == mine
    assert a.rewind("list", app, "--json").stdout == history
    pushed = a.rewind("push", "origin", "--all-projects")
    assert "pushed 3 checkpoint(s)" in pushed.stdout
    log = git("log", "--format=%s", chain, cwd=bare).split()
    assert log == ["cp2", "cp1", "cp0", "rewritten"]  # nothing the vandal left is removed
    fsck(bare)
    b.rewind("fetch", "origin")
    assert local_refs(a) == mine


@pytest.mark.parametrize("shallow_ok", [False, True])
def test_pruned_history_pushes_and_prune_mirrors(tmp_path: Path, shallow_ok: bool):
    """A project pruned here before its first push goes to any remote (one refusing shallow
    updates too); later pushes add to it; --prune makes the remote a mirror."""
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    if shallow_ok:
        git("config", "receive.shallowUpdate", "true", cwd=bare)
    a = Machine(tmp_path, "a")
    app = project(tmp_path / "work")
    for n in range(5):
        (app / "main.py").write_text(f"print({n})\n")
        a.rewind("checkpoint", app, "-m", f"cp{n}", REWIND_MAX_SNAPSHOTS="3")
    assert (a.store / "shallow").exists()
    a.rewind("remote", "add", "origin", str(bare))
    assert "pushed 3 checkpoint(s)" in a.rewind("push", "origin", "-C", app).stdout
    for n in range(5, 7):
        (app / "main.py").write_text(f"print({n})\n")
        a.rewind("checkpoint", app, "-m", f"cp{n}", REWIND_MAX_SNAPSHOTS="3")
    assert "pushed 2 checkpoint(s)" in a.rewind("push", "origin", "-C", app).stdout
    chain = next(r for r in remote_refs(bare) if r.endswith("/checkpoints"))
    assert git("log", "--format=%s", chain, cwd=bare).split() == \
        ["cp6", "cp5", "cp4", "cp3", "cp2"]
    assert not (bare / "shallow").exists()
    fsck(bare)
    a.rewind("delete", "2", "-C", app, "-f")  # cp5, from the middle: cp6 is written again
    assert "up to date" in a.rewind("push", "origin", "-C", app).stdout  # cp6 is there; cp5 stays
    assert git("log", "--format=%s", chain, cwd=bare).split()[:2] == ["cp6", "cp5"]
    a.rewind("push", "origin", "-C", app, "--prune")
    assert git("log", "--format=%s", chain, cwd=bare).split() == ["cp6", "cp4"]
    fsck(bare)
