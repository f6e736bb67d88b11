"""The hook as a security boundary, with the real Claude Code, offline (issue 33, cases 1
and 3).

Case 1: a repository that shadows every module the hook and its helper import (`json.py`,
`hashlib.py`, ..., a `rewindfs/` folder, a `sitecustomize.py`), opened with PYTHONPATH
pointing into it: the model's `rm` is checkpointed, and none of the repository's code
ever ran (each shadow would have written its name to a file outside the project). The
same shadows do run in a hook started as `python -m` without isolation: the scenario is
real.

Case 3: the model's command carries a bearer token and a database password; with
`auto_push` on, the checkpoint reaches a real remote. The reason says what ran, with the
credentials redacted, and no byte of them is in the store, the hooks' files or the
remote, objects decompressed included.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing
from conftest import isolated_git_env, wait_for
from hookproc import auto_push_to, claude_payload, log_lines

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]

# What the hook and its helper import, top-level names: computed, not listed by hand.
IMPORTS = """
import io, json, os, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from rewindfs.hooks.entry import main
main(["claude-code"])
import importlib, pkgutil, rewindfs.hooks
for found in pkgutil.iter_modules(rewindfs.hooks.__path__):   # the helper imports these
    if found.name not in ("__main__", "install", "codextrust"):
        importlib.import_module(f"rewindfs.hooks.{found.name}")
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""
STARTUP = "import sys; print(repr(sorted({m.split('.')[0] for m in sys.modules})))"
SHADOW = "open({marks!r}, 'a').write(__name__ + '\\n')\nraise ImportError('the project ran')\n"


def python_json(*args: str, **kw) -> list[str]:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          check=True, **kw)
    return ast.literal_eval(done.stdout.splitlines()[-1])


def plant_shadows(project: Path, marks: Path, home: Path, scratch: Path) -> list[str]:
    """A shadow of every module the hook imports that a path entry could decide (not
    those Python loads before it reads a path, nor those built into it)."""
    scratch.mkdir()
    (scratch / "package.json").write_text("{}\n")
    env = {"PATH": os.environ["PATH"], "HERMES_HOME": str(home / "probe"),
           "HOME": str(scratch), "REWIND_HOOK_HELPER": "0"}
    used = python_json("-I", "-c", IMPORTS, claude_payload(scratch, "rm -rf build").decode(),
                       cwd=scratch, env=env)
    early = set(python_json("-I", "-c", STARTUP)) | set(sys.builtin_module_names)
    names = sorted((set(used) - early) | {"rewindfs", "sitecustomize", "usercustomize"})
    assert {"json", "hashlib", "threading", "rewindfs", "pygit2"} <= set(names), names
    for name in names:
        (project / name).mkdir()
        (project / name / "__init__.py").write_text(SHADOW.format(marks=str(marks)))
    return names


def test_claude_code_runs_the_hook_and_none_of_the_projects_code(
        tmp_path: Path, home: Path, run_rewind, monkeypatch) -> None:
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    monkeypatch.setenv("REWIND_HOOK_HELPER_IDLE", "30")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "important.txt").write_text("keep me\n")
    (project / "package.json").write_text("{}\n")
    marks = tmp_path / "marks"
    shadows = plant_shadows(project, marks, home, tmp_path / "probe")

    # The scenario: started as `python -m` was, in the project, the hook runs its code.
    control = subprocess.run([sys.executable, "-m", "rewindfs.hooks", "claude-code"],
                             input=claude_payload(project, "ls"), cwd=project, timeout=60,
                             capture_output=True,
                             env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                                  "HERMES_HOME": str(tmp_path / "control-home")})
    assert marks.read_text().split() and control.returncode != 0, control.stderr[-500:]
    marks.unlink()

    agent_home = tmp_path / "agent-home"
    with ModelServer([Shell("rm important.txt"), Say("Done.")], project=str(project)) as srv:
        session = Agent("claude-code", agent_home, project, srv,
                        extra_env={"PYTHONPATH": str(project)})
        run_rewind("hooks", "install", "claude-code", env={"HOME": str(agent_home)},
                   check=True)
        run = session.run("remove important.txt")
        log = f"{run.stderr[-2000:]}\n{srv.describe()}\n{log_lines(home)}"
    assert run.returncode == 0, log
    assert not (project / "important.txt").exists(), log
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    assert [cp["reason"] for cp in listed] == ["after: rm important.txt",
                                               "before: rm important.txt"], log
    assert not marks.exists(), (marks.read_text(), shadows)
    # The helper the hook started is isolated as well (and imported none of them).
    pid = int((home / "rewind-hooks" / "helper.lock").read_text() or 0)
    if pid:
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1] == b"-I"
    assert not marks.exists()


BEARER = "sk-live-4eC39HqLyjWDarjtT1zdp7dc" + "Qx7Lm2" * 4
PASSWORD = "Hunter2-vNq8Kp3ZtR5wY1sB"


def test_a_secret_in_claude_codes_command_is_kept_nowhere(tmp_path: Path, home: Path,
                                                          run_rewind, monkeypatch) -> None:
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    monkeypatch.setenv("REWIND_HOOK_HELPER_IDLE", "30")
    project = tmp_path / "proj"
    (project / "artifacts").mkdir(parents=True)   # (build/ is excluded: no after of it)
    (project / "artifacts" / "out.bin").write_text("built\n")
    (project / "package.json").write_text("{}\n")
    remote = tmp_path / "remote.git"
    auto_push_to(remote, home, run_rewind)
    command = (f'curl -sS -H "Authorization: Bearer {BEARER}" http://127.0.0.1:9/v1/charges '
               f"|| true; MYSQL_PWD={PASSWORD} mysql --password={PASSWORD} -e 'select 1' "
               "|| true; rm -rf artifacts")
    agent_home = tmp_path / "agent-home"
    with ModelServer([Shell(command), Say("Done.")], project=str(project)) as srv:
        session = Agent("claude-code", agent_home, project, srv)
        run_rewind("hooks", "install", "claude-code", env={"HOME": str(agent_home)},
                   check=True)
        run = session.run("clean the build")
        log = f"{run.stderr[-2000:]}\n{srv.describe()}\n{log_lines(home)}"
    assert run.returncode == 0 and not (project / "artifacts").exists(), log
    after, cp = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    for one, phase in ((cp, "before"), (after, "after")):   # the call's before and after
        assert one["reason"].startswith(f'{phase}: curl -sS -H "Authorization: Bearer ***" '), \
            one
        assert "--password=***" in one["reason"] and "MYSQL_PWD=***" in one["reason"], one

    def pushed() -> bool:   # (the remote holds a copy of each checkpoint: another id)
        subjects = subprocess.run(["git", "log", "--all", "--format=%s"],
                                  env=isolated_git_env(GIT_DIR=str(remote)),
                                  capture_output=True, text=True, check=True).stdout
        return cp["reason"] in subjects.splitlines()
    wait_for(pushed, "the automatic push to reach the remote", 120)   # the scenario

    secrets = [BEARER.encode(), PASSWORD.encode(), BEARER[8:30].encode()]
    for git_dir in (home / "checkpoints" / "store", remote):
        objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"],
                                 env=isolated_git_env(GIT_DIR=str(git_dir)),
                                 capture_output=True, timeout=60, check=True).stdout
        assert b"Authorization: Bearer ***" in objects   # the reason is there, redacted
        assert not [s for s in secrets if s in objects], git_dir
    for root in (home, remote):
        for path in root.rglob("*"):
            if path.is_file():
                assert not [s for s in secrets if s in path.read_bytes()], path
