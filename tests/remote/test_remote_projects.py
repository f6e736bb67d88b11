"""Fetched projects in use: two sandboxes of one path, restore into the local project of
that path (pre-rollback snapshot, undo), diff/show/cat/log against another machine,
remotes configured and refused, and the automatic push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import stop_hooks_helper
from remote_servers import GitHttp, Machine, bare_repo, git, wait_for


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Machine, Machine, Path, Path]:
    """Machines a and b sharing one remote and checkpointing one path (two sandboxes)."""
    a, b = Machine(tmp_path, "a"), Machine(tmp_path, "b")
    bare = bare_repo(tmp_path / "r.git")
    app = tmp_path / "work" / "app"
    app.mkdir(parents=True)
    (app / ".git").mkdir()
    for m in (a, b):
        m.rewind("remote", "add", "origin", bare)
    return a, b, app, bare


def test_two_sandboxes_of_one_path_restore_from_each_other(pair):
    a, b, app, bare = pair
    (app / "notes.txt").write_text("written on a\n")
    a.rewind("checkpoint", app, "-m", "a's work")
    a.rewind("push", "origin", "-C", app)
    (app / "notes.txt").write_text("written on b\n")
    (app / "b-only.txt").write_text("b\n")
    b.rewind("checkpoint", app, "-m", "b's work")
    b.rewind("push", "origin", "-C", app)
    assert len({r.split("/")[3] for r in git("for-each-ref", "--format=%(refname)",
                                             cwd=bare).split()}) == 2

    b.rewind("fetch", "origin")
    listed = json.loads(b.rewind("list", "--remote", "origin", "--json").stdout)
    hosts = {p["machine"] for p in listed}
    assert len(listed) == 2 and len(hosts) == 2  # both kept, each under its own machine
    assert {p["directory"] for p in listed} == {str(app)}
    assert json.loads(b.rewind("list", "--all-projects", "--json").stdout)[-1]["name"] \
        .startswith("@origin/app")  # b's own copy is not listed twice

    # --remote NAME: this path as the other machine pushed it.
    diff = b.rewind("diff", "--remote", "origin", "-C", app).stdout
    assert "-written on a" in diff and "+written on b" in diff
    assert b.rewind("cat", "1", "notes.txt", "--remote", "origin", "-C", app).stdout \
        == "written on a\n"
    assert "a's work" in b.rewind("show", "--remote", "origin", "-C", app).stdout
    assert "notes.txt" in b.rewind("log", "notes.txt", "--remote", "origin", "-C", app).stdout

    (app / "notes.txt").write_text("b's edit, not checkpointed\n")
    restored = b.rewind("restore", "1", "--remote", "origin", "-C", app, "--yes")
    assert "pre-rollback snapshot" in restored.stdout
    assert (app / "notes.txt").read_text() == "written on a\n"
    assert not (app / "b-only.txt").exists()
    local = b.rewind("list", app).stdout
    assert "pre-rollback snapshot" in local and "b's work" in local
    b.rewind("undo", "-C", app)
    assert (app / "notes.txt").read_text() == "b's edit, not checkpointed\n"
    assert (app / "b-only.txt").read_text() == "b\n"


def test_fetched_projects_by_name_and_mistakes(pair, tmp_path: Path):
    a, b, app, _ = pair
    (app / "f.txt").write_text("1\n")
    a.rewind("checkpoint", app, "-m", "one", "--label", "v1")
    a.rewind("push", "origin", "--all-projects")
    b.rewind("fetch", "origin")
    assert "one [v1]" in b.rewind("list", "-C", "@origin/app").stdout
    assert b.rewind("cat", "v1", "f.txt", "-C", "@origin/app").stdout == "1\n"
    shown = json.loads(b.rewind("show", "v1", "-C", "@origin/app", "--json").stdout)
    assert shown["remote"] == "origin" and shown["directory"] == str(app)

    for args, message in [
        (("list", "-C", "@origin/nope"), "no project 'nope' fetched from origin"),
        (("list", "--remote", "nope"), "no remote named 'nope'"),
        (("push", "nope"), "no remote named 'nope'"),
        (("restore", "1", "--remote", "origin", "-C", tmp_path / "elsewhere"),
         "origin holds no project at"),
        (("remote", "add", "origin", "/x"), "remote 'origin' exists already"),
        (("remote", "add", "x y", "/x"), "invalid remote name"),
        (("remote", "add", "h", "https://bob:hunter2@example.com/r.git"),
         "refusing a URL with a password"),
        (("remote", "add", "t", "https://ghp_token123@example.com/r.git"),
         "refusing an https URL with a user name or token"),
        (("remote", "add", "e", "ext::sh -c touch% /tmp/pwned"), "not supported"),
        (("remote", "add", "o", "--", "--upload-pack=evil"), "may not start with '-'"),
    ]:
        proc = b.rewind(*args, check=False)
        assert proc.returncode != 0, args
        assert proc.stderr.startswith("rewind: ") and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert "hunter2" not in proc.stderr and "ghp_token123" not in proc.stderr
    for path in b.store.rglob("*"):
        if path.is_file():
            assert b"hunter2" not in path.read_bytes() and b"ghp_token123" not in \
                path.read_bytes()
    assert "origin" in b.rewind("remote", "list").stdout
    removed = b.rewind("remote", "remove", "origin").stdout
    assert "fetched ref(s)" in removed
    assert b.rewind("list", "--all-projects", "--json").stdout.count("@origin") == 0


def test_unreachable_remote_never_fails_a_checkpoint(tmp_path: Path):
    a = Machine(tmp_path, "a")
    app = tmp_path / "app"
    app.mkdir()
    (app / ".git").mkdir()
    (app / "f").write_text("x\n")
    a.rewind("remote", "add", "origin", "git://127.0.0.1:9/nowhere.git")
    took = a.rewind("checkpoint", app, REWIND_AUTO_PUSH="origin", REWIND_AUTO_PUSH_DELAY="0")
    assert "taken" in took.stdout and took.stderr == ""
    state = a.store / "rewind-remotes" / "origin.state.json"
    wait_for("the background push to give up", state.exists, timeout=60, step=0.05)
    assert json.loads(state.read_text())["push"]["ok"] is False
    assert "FAILED" in a.rewind("remote", "list").stdout
    assert (a.store / "rewind-remotes" / "origin.failed").read_text().strip()  # tried again


def test_automatic_push_batches_checkpoints(tmp_path: Path):
    """While one automatic push is held at the server, two more checkpoints are taken:
    they go together in the next push, by the same pusher."""
    served = tmp_path / "served"
    bare = bare_repo(served / "r.git")
    a = Machine(tmp_path, "a")
    app = tmp_path / "app"
    app.mkdir()
    (app / ".git").mkdir()
    env = {"REWIND_AUTO_PUSH": "origin", "REWIND_AUTO_PUSH_DELAY": "0"}
    with GitHttp(served, "u", "p") as server:
        a.use_credentials(f"http://u:p@127.0.0.1:{server.port}")
        a.rewind("remote", "add", "origin", server.url("r.git"))
        server.gate = threading.Event()
        (app / "f").write_text("1\n")
        a.rewind("checkpoint", app, "-m", "c1", **env)
        wait_for("the first automatic push at the server", lambda: server.in_flight() == 1)
        for n in (2, 3):
            (app / "f").write_text(f"{n}\n")
            a.rewind("checkpoint", app, "-m", f"c{n}", **env)
        server.gate.set()
        chain = wait_for("every checkpoint on the remote", lambda: [
            r for r in git("for-each-ref", "--format=%(refname)", cwd=bare).split()
            if r.endswith("/checkpoints") and
            git("log", "-1", "--format=%s", r, cwd=bare).strip() == "c3"], timeout=60)
        # The remote moves its refs before the server has answered (and counted) the
        # push; the pusher logs it once answered.
        log = a.store / "rewind-remotes" / "autopush.log"
        wait_for("the pusher to log the second push",
                 lambda: "pushed 2 checkpoint(s)" in log.read_text(), timeout=60)
        pushes = [r for r in server.requests if r[0] == "POST" and r[1].endswith("receive-pack")
                  and r[2] == 200]
    assert git("log", "--format=%s", chain[0], cwd=bare).split() == ["c3", "c2", "c1"]
    assert len(pushes) == 2, pushes  # c1 alone, then c2 and c3 together
    assert "pushed 1 checkpoint(s)" in log.read_text()
    assert os.listdir(a.store / "rewind-remotes").count("origin.pending") == 0


def test_an_agent_hook_pushes_in_the_background(tmp_path: Path, request):
    """A Claude Code PreToolUse hook before `rm -rf`: the hook answers and exits, and the
    checkpoint it took reaches the remote by itself."""
    a = Machine(tmp_path, "a")
    bare = bare_repo(tmp_path / "r.git")
    app = tmp_path / "app"
    (app / "build").mkdir(parents=True)
    (app / "package.json").write_text("{}\n")
    a.rewind("remote", "add", "origin", bare)
    payload = {"session_id": "s1", "transcript_path": "/x.jsonl", "cwd": str(app),
               "prompt_id": "p1", "permission_mode": "default",
               "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "rm -rf build"}, "tool_use_id": "t1"}
    done = subprocess.run([sys.executable, "-m", "rewindfs.hooks", "claude-code"],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=60,
                          env=a.env(REWIND_AUTO_PUSH="origin", REWIND_AUTO_PUSH_DELAY="0"))
    request.addfinalizer(lambda: stop_hooks_helper(a.hermes))  # the hook started one
    assert done.returncode == 0, done.stderr
    assert json.loads(a.rewind("list", "-C", app, "--json").stdout), "the hook took no checkpoint"
    wait_for("the hook's checkpoint on the remote", lambda: [
        r for r in git("for-each-ref", "--format=%(refname)", cwd=bare).split()
        if r.endswith("/checkpoints")], timeout=60, step=0.05)


def test_an_id_from_list_all_projects_reads_a_fetched_checkpoint_anywhere(tmp_path: Path):
    """An id copied from `rewind list --all-projects` on b names a checkpoint b fetched
    from a (another path): `cat`, `show` and `restore --to` take it from inside any
    project of b's; a restore into a project needs the project named."""
    a, b = Machine(tmp_path, "a"), Machine(tmp_path, "b")
    bare = bare_repo(tmp_path / "r.git")
    theirs, ours = tmp_path / "work" / "theirs", tmp_path / "work" / "ours"
    for path, m in ((theirs, a), (ours, b)):
        path.mkdir(parents=True)
        (path / ".git").mkdir()
        m.rewind("remote", "add", "origin", bare)
    (theirs / "t.txt").write_text("a's file\n")
    a.rewind("checkpoint", theirs, "-m", "a's work")
    a.rewind("push", "origin", "-C", theirs)
    (ours / "o.txt").write_text("b's file\n")
    b.rewind("checkpoint", ours, "-m", "b's work")
    b.rewind("fetch", "origin")
    everything = json.loads(b.rewind("list", "--all-projects", "--json").stdout)
    fetched = [p for p in everything if p.get("remote") == "origin"]
    assert len(fetched) == 1 and fetched[0]["directory"] == str(theirs)
    commit = fetched[0]["checkpoints"][0]["hash"]
    assert b.rewind("cat", commit[:12], "t.txt", cwd=ours).stdout == "a's file\n"
    assert json.loads(b.rewind("show", "--json", commit, cwd=ours).stdout)["hash"] == commit
    refused = b.rewind("restore", commit, "--yes", cwd=ours, check=False)
    assert refused.returncode == 1 and "@origin/" in refused.stderr, refused.stderr
    assert sorted(p.name for p in ours.iterdir()) == [".git", "o.txt"]
    b.rewind("restore", commit, "--to", tmp_path / "copy", cwd=ours)
    assert (tmp_path / "copy" / "t.txt").read_text() == "a's file\n"
