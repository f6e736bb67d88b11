"""A marker planted by another user never makes a hook checkpoint someone else's directory
(issue 33, case 9): a `package.json` user nobody puts in a shared sticky parent (as /tmp
is), or in a directory nobody owns, is not adopted as the project root of a marker-less
scratch directory below it. The scratch directory is then in no project, which the hook
refuses and says (issue 43); checkpointed once by hand, it is protected, and the hook's
checkpoint holds the scratch directory only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookproc import claude_payload, hook_env, run_hook

NOBODY = ["runuser", "-u", "nobody", "--"]


@pytest.fixture
def shared_parent() -> Iterator[Path]:
    """A directory in /tmp as /tmp itself is: root's, world-writable, sticky."""
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root and runuser to act as user nobody")
    path = Path(tempfile.mkdtemp(prefix="rewind-shared-", dir="/tmp"))
    os.chmod(path, 0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def as_nobody(script: str) -> None:
    subprocess.run([*NOBODY, "sh", "-c", script], check=True, timeout=60)


@pytest.mark.parametrize("parent_kind", ["sticky world-writable", "owned by nobody"])
def test_a_planted_marker_is_not_adopted(parent_kind: str, shared_parent: Path,
                                         home: Path, run_rewind, files_of) -> None:
    parent = shared_parent
    if parent_kind == "owned by nobody":
        parent = shared_parent / "theirs"
        as_nobody(f"mkdir -m 755 {parent}")
    # Another user plants a project marker and files of theirs in the parent.
    as_nobody(f"echo '{{}}' > {parent}/package.json && echo mine > {parent}/planted.txt")
    assert (parent / "package.json").stat().st_uid != os.geteuid()   # the scenario
    scratch = parent / "scratch"
    scratch.mkdir()
    (scratch / "notes.txt").write_text("my notes\n")

    done = run_hook("claude-code", claude_payload(scratch, "rm notes.txt"), scratch,
                    hook_env(home))
    message = json.loads(done.stdout)["systemMessage"]
    assert f"{scratch} is in no project" in message, message   # not the planted parent's
    env = {"HERMES_HOME": str(home)}
    run_rewind("checkpoint", "-m", "mine", cwd=scratch, env=env, check=True)
    (scratch / "notes.txt").write_text("my notes, edited\n")
    run_hook("claude-code", claude_payload(scratch, "rm notes.txt", call="t2"), scratch,
             hook_env(home))
    status = json.loads(run_rewind("status", "--json", env=env, check=True).stdout)
    assert [p["workdir"] for p in status["projects"]] == [str(scratch)]
    cp, _ = json.loads(run_rewind("list", "--json", cwd=scratch, env=env, check=True).stdout)
    assert cp["reason"] == "before: rm notes.txt"
    assert sorted(files_of(cp["hash"])) == [b"notes.txt"]
