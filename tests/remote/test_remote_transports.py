"""Push from one machine, fetch on another, over real transports on loopback: file://,
git:// (`git daemon`) and https (`git http-backend` behind basic auth, a self-signed
certificate, credentials from git's credential helper)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pygit2
import pytest
from conftest import force_unmount
from remote_servers import GitHttp, Machine, Sshd, bare_repo, git, git_daemon

PASSWORD = "s3cret-pa55word-never-stored"


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Machine, Machine]:
    return Machine(tmp_path, "a"), Machine(tmp_path, "b")


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "app"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()  # a project marker, as in a real checkout
    (root / "src" / "main.py").write_text("print('v1')\n")
    (root / "README.md").write_text("# app\n")
    (root / ".env").write_text(f"TOKEN={PASSWORD}\n")  # a secret: never captured, never sent
    return root


@pytest.fixture(params=["file", "git", "https", "ssh"])
def remote_url(request, tmp_path: Path, machines) -> Iterator[str]:
    """A bare repository and the URL both machines use for it, over each transport."""
    served = tmp_path / "served"
    served.mkdir()
    bare_repo(served / "checkpoints.git")
    with ExitStack() as stack:
        if request.param == "file":
            yield f"file://{served / 'checkpoints.git'}"
        elif request.param == "ssh":
            server = stack.enter_context(Sshd(tmp_path / "sshd"))
            for machine in machines:
                config = server.client_config(machine.home)
                machine.git_config(("core.sshCommand", f"ssh -F {config}"))
                machine.agent = str(server.agent_socket)
            yield f"rewind-test:{served / 'checkpoints.git'}"
        elif request.param == "git":
            yield stack.enter_context(git_daemon(served, tmp_path / "daemon.log")) \
                + "checkpoints.git"
        else:
            server = stack.enter_context(GitHttp(served, "alice", PASSWORD, tls=tmp_path / "tls"))
            for machine in machines:
                machine.use_credentials(f"https://alice:{PASSWORD}@127.0.0.1:{server.port}",
                                        server.certificate)
            yield server.url("checkpoints.git")
            assert any(status == 401 for _, _, status in server.requests), \
                "the server never asked for credentials"
            assert all(status in (200, 401) for _, _, status in server.requests)


def test_push_on_one_machine_fetch_on_another(machines, app_dir: Path, remote_url: str,
                                              tmp_path: Path, fuse_usable):
    a, b = machines
    a.rewind("checkpoint", app_dir, "-m", "first")
    (app_dir / "src" / "main.py").write_text("print('v2')\n")
    a.rewind("checkpoint", app_dir, "-m", "second", "--label", "good")
    a.rewind("remote", "add", "origin", remote_url)
    pushed = a.rewind("push", "origin", "-C", app_dir)
    assert "pushed 2 checkpoint(s)" in pushed.stdout
    assert "up to date" in a.rewind("push", "origin", "-C", app_dir).stdout

    b.rewind("remote", "add", "origin", remote_url)
    fetched = b.rewind("fetch", "origin")
    assert "1 new project(s)" in fetched.stdout
    assert str(app_dir) in fetched.stdout

    repo = pygit2.Repository(str(b.store))
    refs = [r for r in repo.references if r.startswith("refs/rewind/remotes/origin/m/")]
    assert not [r for r in repo.references if r.startswith("refs/hermes/")], \
        "a fetch wrote a local project ref"
    chain = next(r for r in refs if r.endswith("/checkpoints"))
    tip = repo.references[chain].peel(pygit2.Commit)
    assert tip.message.startswith("second")
    files = {e.name for e in tip.tree}
    assert files == {"README.md", "src"}, "the secret .env left machine a"
    assert any(r.endswith("/labels/good") for r in refs)

    # Machine b lists, browses and restores machine a's project.
    listed = b.rewind("list", "--all-projects").stdout
    assert f"Checkpoints for {app_dir} on " in listed and "(@origin/app)" in listed
    assert "second [good]" in listed
    assert str(app_dir) in b.rewind("status").stdout
    mnt = tmp_path / "mnt"
    b.rewind("mount", mnt)
    try:
        assert sorted(os.listdir(mnt / "@origin" / "app" / "latest")) == ["README.md", "src"]
        assert (mnt / "@origin" / "app" / "2" / "src" / "main.py").read_text() == "print('v1')\n"
        assert (mnt / "@origin" / "app" / "good" / "src" / "main.py").read_text() \
            == "print('v2')\n"
    finally:
        b.rewind("umount", mnt, check=False)
        force_unmount(mnt)
    out = tmp_path / "restored"
    b.rewind("restore", "2", "-C", "@origin/app", "--to", out)
    assert (out / "src" / "main.py").read_text() == "print('v1')\n"
    assert sorted(os.listdir(out)) == ["README.md", "src"]

    for machine in machines:  # the credential is nowhere in either store, nor printed
        for path in machine.store.rglob("*"):
            if path.is_file():
                assert PASSWORD.encode() not in path.read_bytes(), path
    for out in (pushed.stdout + pushed.stderr, fetched.stdout + fetched.stderr):
        assert PASSWORD not in out


def test_remote_namespace_never_touches_branches(machines, app_dir: Path, tmp_path: Path):
    """A remote that is also a code repository: its branches and tags are left alone, and a
    plain clone of it does not even see the checkpoints."""
    a, _ = machines
    code = tmp_path / "code.git"
    bare_repo(code)
    work = tmp_path / "clone"
    git("clone", "-q", str(code), str(work))
    (work / "f").write_text("x\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "c", "--allow-empty",
        cwd=work)
    git("add", "f", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "code", cwd=work)
    git("push", "-q", "origin", "HEAD:main", "HEAD:refs/tags/v1", cwd=work)
    before = git("for-each-ref", "refs/heads", "refs/tags", cwd=code)

    a.rewind("checkpoint", app_dir)
    a.rewind("remote", "add", "origin", str(code))
    a.rewind("push", "origin", "--all-projects")
    assert git("for-each-ref", "refs/heads", "refs/tags", cwd=code) == before
    assert git("for-each-ref", "--format=%(refname)", "refs/rewind/", cwd=code).strip()
    fresh = tmp_path / "fresh"
    git("clone", "-q", str(code), str(fresh))
    assert "refs/rewind" not in git("for-each-ref", cwd=fresh)
