"""What `forget` and `push` take a remote's word for (issue 34, cases 6 and 7): forget
removes only the local project's own refs; push checks the remote when nothing is new,
takes no forged copy for one of this machine's checkpoints, retries a ref lock another
copy of the store held, refuses credentials in any part of a URL, and never runs a
transport rewindfs does not support, whatever the user's git config says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pygit2
from crafted import Crafted
from remote_servers import GitHttp, Machine, bare_repo, git, wait_for


def project(root: Path, name: str = "app") -> Path:
    app = root / name
    (app / ".git").mkdir(parents=True)
    (app / "f.txt").write_text("1\n")
    return app


def remote_refs(bare: Path) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/rewind/", cwd=bare)
    return dict(line.split() for line in out.splitlines())


def test_forget_keeps_what_other_machines_pushed_and_push_prune_removes_it(tmp_path: Path):
    a, b = Machine(tmp_path, "a"), Machine(tmp_path, "b")
    bare = bare_repo(tmp_path / "r.git")
    app = project(tmp_path / "work")
    for m in (a, b):
        m.rewind("remote", "add", "origin", bare)
        m.rewind("checkpoint", app, "-m", f"by {m.name}")
        m.rewind("push", "origin", "-C", app)
    b.rewind("fetch", "origin")
    b.rewind("forget", app, "-f")
    listed = json.loads(b.rewind("list", "--remote", "origin", "--json").stdout)
    assert len(listed) == 2, listed  # a's copy, and the mirror of what b pushed
    mine = (b.store / "rewind-machine-id").read_text().strip()
    other = next(p["name"] for p in listed if p["machine"] != mine)
    assert "by a" in b.rewind("list", "-C", other).stdout

    # b forgot its project: a prune of every project removes it from the remote (only
    # b's folder), and leaves a's there.
    machines_before = {r.split("/")[3] for r in remote_refs(bare)}
    pruned = b.rewind("push", "origin", "--all-projects", "--prune", check=False)
    assert pruned.returncode == 0, pruned.stderr
    machines_after = {r.split("/")[3] for r in remote_refs(bare)}
    assert len(machines_before) == 2 and len(machines_after) == 1, remote_refs(bare)
    listed = json.loads(b.rewind("list", "--remote", "origin", "--json").stdout)
    assert [p["machine"] for p in listed] != [mine] and len(listed) == 1, listed
    other = listed[0]["name"]  # alone now: named by its basename only
    assert "by a" in b.rewind("list", "-C", other).stdout

    # An explicit forget of the fetched copy forgets it here (the remote keeps it).
    b.rewind("forget", other, "-f")
    assert all(p["name"] != other for p in json.loads(
        b.rewind("list", "--remote", "origin", "--json").stdout))
    assert len(remote_refs(bare)) > 0


def test_push_checks_the_remote_when_nothing_is_new(tmp_path: Path):
    """The remote lost this machine's refs (emptied, recreated): a push with nothing new
    here finds that out and sends everything again, instead of saying up to date."""
    a = Machine(tmp_path, "a")
    bare = bare_repo(tmp_path / "r.git")
    app = project(tmp_path)
    a.rewind("remote", "add", "origin", bare)
    a.rewind("checkpoint", app, "-m", "one")
    a.rewind("push", "origin", "-C", app)
    sent = remote_refs(bare)
    for ref in sent:
        git("update-ref", "-d", ref, cwd=bare)
    assert not remote_refs(bare)
    again = a.rewind("push", "origin", "-C", app)
    assert "up to date" not in again.stdout, again.stdout
    assert remote_refs(bare) == sent
    assert "up to date" in a.rewind("push", "origin", "-C", app).stdout


def test_a_forged_copy_never_stands_in_for_a_checkpoint(tmp_path: Path):
    """Someone writes this machine's folder on the remote: a commit claiming, through
    Rewind-Origin, to carry a checkpoint, with other files. The push does not take it
    for that checkpoint: it sends the real copy on top."""
    a = Machine(tmp_path, "a")
    bare = bare_repo(tmp_path / "r.git")
    app = project(tmp_path)
    a.rewind("remote", "add", "origin", bare)
    a.rewind("checkpoint", app, "-m", "one")
    a.rewind("push", "origin", "-C", app)
    (app / "f.txt").write_text("the real second\n")
    a.rewind("checkpoint", app, "-m", "two")
    real = json.loads(a.rewind("list", "-C", app, "--json").stdout)[0]["hash"]
    chain = next(r for r in remote_refs(bare) if r.endswith("/checkpoints"))
    evil = Crafted(bare, existing=True)  # plain git, on the remote itself
    forged = evil.commit(evil.tree({"f.txt": ("100644", evil.blob(b"forged\n"))}),
                         f"two\n\nRewind-Origin: {real}", parent=remote_refs(bare)[chain])
    evil.git("update-ref", chain, forged)

    a.rewind("push", "origin", "-C", app)
    tip = remote_refs(bare)[chain]
    assert tip != forged
    repo = pygit2.Repository(str(a.store))
    assert git("rev-parse", f"{tip}^{{tree}}", cwd=bare).strip() == str(repo[real].tree_id)
    assert git("rev-parse", f"{tip}^", cwd=bare).strip() == forged  # stacked, nothing lost


def test_two_copies_of_one_store_pushing_at_once_both_land(tmp_path: Path):
    """A store copied whole pushes as the same machine: both pushes held at the server
    until both are in flight, then one takes git's ref lock first; the other retries
    (not git's raw `cannot lock ref`) and stacks its checkpoint on top."""
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    a = Machine(tmp_path, "a")
    app = project(tmp_path / "work")
    with GitHttp(served, "u", "p") as server:
        a.use_credentials(f"http://u:p@127.0.0.1:{server.port}")
        a.rewind("remote", "add", "origin", server.url("r.git"))
        a.rewind("checkpoint", app, "-m", "base")
        a.rewind("push", "origin", "-C", app)
        c = Machine(tmp_path, "c")
        shutil.rmtree(c.hermes)
        shutil.copytree(a.hermes, c.hermes, symlinks=True)
        shutil.copytree(a.home, c.home, symlinks=True, dirs_exist_ok=True)
        for m in (a, c):
            (app / "f.txt").write_text(f"by {m.name}\n")
            m.rewind("checkpoint", app, "-m", f"by {m.name}")
        server.hold_pushes = 2
        pushes = [m.start("push", "origin", "-C", app) for m in (a, c)]
        wait_for("both pushes in flight at once", lambda: server.in_flight() == 2)
        for proc in pushes:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            assert "cannot lock ref" not in err
    chain = next(r for r in remote_refs(bare) if r.endswith("/checkpoints"))
    subjects = git("log", "--format=%s", remote_refs(bare)[chain], cwd=bare).split("\n")
    assert sorted(subjects[:2]) == ["by a", "by c"] and subjects[2] == "base", subjects


def test_credentials_in_any_part_of_a_url_are_refused_and_never_shown(tmp_path: Path):
    a = Machine(tmp_path, "a")
    for url in ("ssh://user%3Ahunter2@example.com/r.git",
                "https://example.com/r.git?private_token=hunter2",
                "https://example.com/r.git#hunter2"):
        done = a.rewind("remote", "add", "x", url, check=False)
        assert done.returncode == 1 and "hunter2" not in done.stdout + done.stderr, done.stderr
        assert "refusing" in done.stderr
    # Written by hand into rewindfs's own file: never used, never shown.
    folder = a.store / "rewind-remotes"
    a.rewind("remote", "add", "ok", tmp_path / "r.git")
    (folder / "hand.json").write_text(json.dumps(
        {"url": "https://example.com/r.git?private_token=hunter2"}))
    shown = a.rewind("remote", "list", check=False)
    assert "hunter2" not in shown.stdout + shown.stderr
    pushed = a.rewind("push", "hand", check=False)
    assert pushed.returncode != 0 and "hunter2" not in pushed.stdout + pushed.stderr


def test_only_the_transports_rewindfs_supports_run(tmp_path: Path):
    """The user's git config allows ext:: and rewrites the remote's URL to it
    (`insteadOf`): rewindfs's push and fetch refuse to run it."""
    a = Machine(tmp_path, "a")
    app = project(tmp_path)
    a.rewind("checkpoint", app)
    marker = tmp_path / "pwned"
    a.git_config(("protocol.allow", "always"), ("protocol.ext.allow", "always"),
                 (f"url.ext::sh -c touch% {marker}% .insteadOf", "git://127.0.0.1:9/"))
    a.rewind("remote", "add", "origin", "git://127.0.0.1:9/r.git")
    for args in (("push", "origin", "-C", app), ("fetch", "origin")):
        done = a.rewind(*args, check=False)
        assert done.returncode == 1, done.stderr
        assert not marker.exists(), f"{args[0]} ran ext::"
