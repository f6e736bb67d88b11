"""The hook's fast paths: nothing changed since the newest checkpoint is answered from the
store's stamp (its ref read by libgit2, no object, no capture), and a checkpoint after a
few changes captures only the changed paths, giving the very tree a full capture gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import settle, wait_for

HOOK_IN_PROCESS = """
import io, json, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from rewindfs.hooks.entry import main
assert main(['claude-code']) == 0
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pygit2', 'yaml')
                        or m.startswith('rewindfs.store.capture'))))
"""


def payload(cwd: Path, command: str, call: str) -> str:
    return json.dumps({"session_id": "s1", "prompt_id": "p1", "cwd": str(cwd),
                       "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "tool_use_id": call})


def run_hook(home: Path, cwd: Path, command: str, call: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", HOOK_IN_PROCESS, payload(cwd, command, call)],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "HERMES_HOME": str(home),
                               "HOME": str(home.parent), "REWIND_HOOK_HELPER": "0"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


def stamped(home: Path) -> bool:
    return any((home / "checkpoints" / "store" / "stamps").glob("*.json"))


def log_lines(home: Path) -> list[str]:
    return (home / "rewind-hooks" / "hook.log").read_text().splitlines()


def steps(home: Path) -> list[dict]:
    [log] = (home / "checkpoints" / "store" / "steps").glob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_nothing_changed_is_answered_without_a_capture(project: Path, home: Path,
                                                      run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    settle(project)   # nothing in the project was touched just now: no doubt
    assert "rewindfs.store.capture" in run_hook(home, project, "rm -rf build", "t1")
    wait_for(lambda: stamped(home), "the stamp the checkpoint leaves behind")
    loaded = run_hook(home, project, "rm -rf build", "t2")
    assert "nothing changed (stamp)" in log_lines(home)[-1]
    # The ref read by libgit2 (the one reader); no capture, no settings parsed.
    assert "pygit2" in loaded and not [m for m in loaded if m.startswith(("yaml", "rewindfs"))]
    # The step is logged all the same, against the newest checkpoint: revert TURN works.
    begun = [e for e in steps(home) if e["event"] == "begin"]
    assert [e["step"] for e in begun] == ["claude-code:t1", "claude-code:t2"]
    assert begun[0]["commit"] == begun[1]["commit"]
    assert len(json.loads(run_rewind("list", "--json", cwd=project).stdout)) == 1
    # A change since: the repository again, and a new checkpoint.
    (project / "README.md").write_text("changed\n")
    assert "rewindfs.store.capture" in run_hook(home, project, "rm -rf build", "t3")
    assert len(json.loads(run_rewind("list", "--json", cwd=project).stdout)) == 2


def test_a_few_changes_are_captured_alone_and_exactly(project: Path, home: Path,
                                                     run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    (project / "node_modules" / "x").mkdir(parents=True)
    settle(project)
    run_hook(home, project, "rm -rf build", "t1")
    wait_for(lambda: stamped(home), "the stamp the checkpoint leaves behind")
    (project / "README.md").write_text("edited\n")
    (project / "docs" / "guide.txt").unlink()
    (project / "src" / "new" / "deep").mkdir(parents=True)
    (project / "src" / "new" / "deep" / "mod.py").write_text("x = 1\n")
    (project / "node_modules" / "x" / "dep.js").write_text("ignored\n")
    run_hook(home, project, "rm -rf src", "t2")
    assert "checkpoint of" in log_lines(home)[-1]
    assert "4 changed path(s) looked at" in log_lines(home)[-1]
    # A full capture now finds nothing more to record: the scoped one got it all.
    done = run_rewind("checkpoint", str(project), "--json", check=True)
    assert json.loads(done.stdout)["taken"] is False
    listed = json.loads(run_rewind("list", "--json", cwd=project).stdout)
    shown = run_rewind("diff", str(listed[1]["number"]), "1", "--name-only", cwd=project,
                       check=True).stdout.split()
    assert sorted(shown) == ["README.md", "docs/guide.txt", "src/new/deep/mod.py"]
