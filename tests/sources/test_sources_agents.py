"""The real `@kilocode/cli` and `opencode-ai` (pinned, from npm) make the data: a scripted
model server on 127.0.0.1 makes each agent create, edit and delete files over two turns of
one session; then `rewind` lists their steps, mounts them, restores from them, undoes, and
keeps them past the agent's own `git gc`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell, Write
from agentsim.clis import Agent, binary, missing
from agentsim.recorded import ON_WORKER
from conftest import isolated_git_env, make_git_repo, wait_for

pytestmark = pytest.mark.long  # real agent runs: started first (tests/conftest.py)
ON_KILOS_WORKER, ON_OPENCODES_WORKER = ON_WORKER["kilo"], ON_WORKER["opencode"]


def snapshot_git(env: dict[str, str], agent: str, *args: str) -> str:
    """git in the agent's snapshot repository (the only one for this project)."""
    [gitdir] = [p for p in (Path(env["XDG_DATA_HOME"]) / agent / "snapshot").glob("*/*")
                if (p / "HEAD").exists()]
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], capture_output=True,
                          text=True, check=True, env=isolated_git_env()).stdout


@pytest.mark.parametrize("name", [pytest.param("kilo", marks=ON_KILOS_WORKER),
                                  pytest.param("opencode", marks=ON_OPENCODES_WORKER)])
def test_steps_of_a_real_session(name, agent_session, run_rewind, mnt):
    recorded = agent_session(name)
    project, env = recorded.project, recorded.env

    def rewind(*args, **kw):
        return run_rewind(*args, cwd=project, env=env, check=True, **kw)

    steps = json.loads(rewind("list", "--agent", name, "--json").stdout)
    # Newest first: the deletion (turn 2), the edit, the write (turn 1).
    assert [(s["step"], s["files"]) for s in steps] == [
        ("2.1", ["b.txt"]), ("1.2", ["a.txt"]), ("1.1", ["new.txt"])], steps
    assert steps[0]["prompt"] == "delete b" or "delete b" in steps[0]["prompt"]
    assert len({s["session"] for s in steps}) == 1 and not any(s["gone"] for s in steps)
    assert rewind("cat", f"{name}:1", "b.txt").stdout == "bye\n"
    assert rewind("show", f"{name}:2:a.txt").stdout == "hello\n"

    mounted = Path(rewind("mount", str(mnt)).stdout.strip())
    agent_project = mounted / name / "project"
    session = steps[0]["session"]
    assert (agent_project / "1").readlink() == Path(f"{session}/2.1")
    # The deleted file, at the step that deleted it and at the step before.
    assert (agent_project / "1" / "b.txt").read_text() == "bye\n"
    assert (agent_project / session / "1.2" / "b.txt").read_text() == "bye\n"
    assert not (agent_project / session / "end" / "b.txt").exists()
    assert os.getxattr(agent_project / "1", "user.rewind.step") == b"2.1"
    with pytest.raises(OSError):
        (agent_project / "1" / "x").write_text("no")
    rewind("umount", str(mnt))

    rewind("restore", f"{name}:1", "--yes")
    assert (project / "b.txt").read_text() == "bye\n"
    rewind("undo")
    assert not (project / "b.txt").exists()


@ON_KILOS_WORKER
def test_a_kilo_session_kept_past_its_gc(agent_session, run_rewind):
    """Done when: imported, a Kilo session survives `git gc --prune=now` in Kilo's snapshot
    repository (once Kilo's own pins are gone, as its 7-day cleanup drops them)."""
    recorded = agent_session("kilo")
    project, env = recorded.project, recorded.env

    def rewind(*args, **kw):
        return run_rewind(*args, cwd=project, env=env, **kw)

    pins = snapshot_git(env, "kilo", "for-each-ref", "--format=%(refname)",
                        "refs/kilo/snapshots").split()
    assert pins  # Kilo 7.7.7 pins its snapshots: that is what keeps them, until 7 days
    imported = json.loads(rewind("import", "kilo", "--json", check=True).stdout)
    assert len(imported["created"]) == 4  # three listed steps and the session's end
    for ref in pins:
        snapshot_git(env, "kilo", "update-ref", "-d", ref)
    snapshot_git(env, "kilo", "gc", "-q", "--prune=now")
    listed = json.loads(rewind("list", "--agent", "kilo", "--json", check=True).stdout)
    assert [s["gone"] for s in listed] == [True, True, False]  # the first is committed work
    proc = rewind("restore", "kilo:1", "--yes")
    assert proc.returncode == 1 and "is gone" in proc.stderr
    label = f"kilo-{listed[0]['session']}-2.1"
    rewind("restore", label, "--yes", check=True)
    assert (project / "b.txt").read_text() == "bye\n"
    assert (project / "new.txt").read_text() == "created by the agent\n"


@ON_OPENCODES_WORKER
def test_a_moved_opencode_project(agent_session, run_rewind):
    """OpenCode keeps committed objects only in the project's own .git (its snapshot repo
    names it in objects/info/alternates). Moved, the project is found by its id and its
    objects in their new place."""
    recorded = agent_session("opencode")
    project, env = recorded.project, recorded.env
    alternates = snapshot_git(env, "opencode", "rev-parse", "--git-path",
                              "objects/info/alternates").strip()
    assert Path(alternates).read_text().strip() == str(project / ".git" / "objects")
    moved = project.parent / "moved"  # inside the copy: the next test gets a fresh one
    project.rename(moved)
    proc = run_rewind("list", "--agent", "opencode", cwd=moved, env=env, check=True)
    assert f"recorded it at {project}" in proc.stdout
    assert run_rewind("cat", "opencode:1", "b.txt", cwd=moved, env=env,
                      check=True).stdout == "bye\n"
    run_rewind("restore", "opencode:3", "--yes", cwd=moved, env=env, check=True)
    assert sorted(p.name for p in moved.iterdir() if p.name != ".git") == ["a.txt", "b.txt"]


def test_the_kilo_hook_imports_kilos_snapshots(tmp_path, home, run_rewind):
    """auto_import: [kilo]: the hook (`rewind hooks install kilo`) keeps Kilo's snapshots in
    the store as the session goes, in a detached child the agent never waits for."""
    if binary("kilo") is None:
        pytest.skip(missing("kilo"))
    project = tmp_path / "project"
    make_git_repo(project, {"a.txt": b"hello\n", "b.txt": b"bye\n"})
    moves = [Write("new.txt", "created\n"), Shell("rm b.txt"), Say("done")]
    with ModelServer(moves, project=str(project)) as server:
        agent = Agent("kilo", tmp_path / "agent-home", project, server,
                      extra_env={"REWIND_AUTO_IMPORT": "kilo"})
        env = {k: v for k, v in agent.env().items() if k in ("HOME", "XDG_CONFIG_HOME")}
        run_rewind("hooks", "install", "kilo", env=env, check=True)
        run = agent.run("tidy up")
        assert run.returncode == 0, f"{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    assert not (project / "b.txt").exists()

    def kilo_labels() -> list[str]:
        proc = run_rewind("list", "--json", cwd=project)
        listed = json.loads(proc.stdout) if proc.returncode == 0 else []
        return [label for cp in listed for label in cp["labels"] if label.startswith("kilo-")]

    wait_for(lambda: any(label.endswith("-1.1") for label in kilo_labels()),
             "the hook's background import of Kilo's first step")
    session = kilo_labels()[0].split("-")[1]
    run_rewind("restore", f"kilo-{session}-1.1", "--yes", cwd=project, check=True)
    assert (project / "b.txt").read_text() == "bye\n"
