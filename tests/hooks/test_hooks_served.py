"""The agents' hook run by the resident process (resident.client.run_hook), as `rewind`
commands are: the installed command connects, a child of the resident process runs the
very same hooks.entry with the hook's stdin, stdout, environment and working directory,
and the hook's own process imports nothing but what connecting needs.

That a hook was served is shown by the resident process's own count, not assumed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import REWIND, wait_for
from hookproc import claude_payload, hook_env, log_lines, run_hook

from rewindfs.hooks import helper
from rewindfs.hooks.agents import hook_command

pytestmark = [pytest.mark.usefixtures("no_helper_left")]


def served_count(home: Path) -> int:
    """How many commands and hooks the resident process ran for clients."""
    code = ("import json; from rewindfs.resident.source import ask; "
            "print(json.dumps(ask({'kind': 'status'})))")
    found: dict = {}

    def asked() -> bool:
        out = subprocess.run([os.path.join(os.path.dirname(REWIND), "python"), "-c", code],
                             env=hook_env(home), capture_output=True, text=True, timeout=60)
        found.update(json.loads(out.stdout or "null") or {})
        return "served" in found

    wait_for(asked, "the resident process's status")
    return found["served"]


@pytest.fixture
def up(project: Path, home: Path) -> Path:
    """A project whose first checkpoint a hook took in its own process (which starts the
    resident process), that process now answering."""
    (project / "package.json").write_text("{}\n")
    (project / "keep.txt").write_text("keep me\n")
    run_hook("claude-code", claude_payload(project, "rm -rf build", call="t0"), project,
             hook_env(home))
    wait_for(lambda: helper.running(home / "rewind-hooks") is not None, "the helper to start")
    served_count(home)
    return project


def test_a_destructive_hook_is_served_and_checkpoints_before(up: Path, home: Path,
                                                             run_rewind, files_of) -> None:
    before = served_count(home)
    (up / "keep.txt").write_text("changed, then removed\n")
    done = run_hook("claude-code", claude_payload(up, "rm keep.txt", call="t1"), up,
                    hook_env(home))
    assert served_count(home) == before + 1   # the scenario: the resident process ran it
    assert done.stdout == b""   # nothing left unprotected: nothing to say
    newest = json.loads(run_rewind("list", "--json", cwd=up, check=True).stdout)[0]
    assert newest["reason"] == "before: rm keep.txt"
    assert files_of(newest["hash"])[b"keep.txt"][1] == b"changed, then removed\n"
    assert "by the helper" in log_lines(home)[-1]


def test_what_is_left_out_is_said_in_the_served_answer(up: Path, home: Path) -> None:
    """The answer is the child's, written to the hook's own stdout: a file over the size
    cap that the command removes, said to the user."""
    (up / "data.csv").write_bytes(b"1,a\n" * (3 * 1024 * 1024 // 4 + 1))   # over 2 MiB
    before = served_count(home)
    done = run_hook("claude-code", claude_payload(up, "rm -rf data.csv", call="t2"), up,
                    hook_env(home, REWIND_MAX_FILE_SIZE_MB="2"))
    assert served_count(home) == before + 1
    answer = json.loads(done.stdout)
    assert "data.csv" in json.dumps(answer) and "max_file_size_mb" in json.dumps(answer), \
        answer


def test_the_served_hook_imports_only_what_connecting_needs(up: Path, home: Path) -> None:
    before = served_count(home)
    argv = shlex.split(hook_command("claude-code"))
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]],
                          input=claude_payload(up, "rm -rf dist", call="t3"), cwd=up,
                          env=hook_env(home), capture_output=True, timeout=120)
    assert done.returncode == 0
    assert served_count(home) == before + 1   # the scenario: served
    imported = {line.rsplit("|", 1)[1].strip()
                for line in done.stderr.decode().splitlines() if line.startswith("import time:")}
    ours = {m for m in imported if m.startswith("rewindfs")}
    assert ours <= {"rewindfs", "rewindfs.hooks", "rewindfs.hooks.__main__",
                    "rewindfs.hooks.hooklog", "rewindfs.resident", "rewindfs.resident.client",
                    "rewindfs.resident.wire", "rewindfs.portable"}, sorted(ours)
    assert not imported & {"json", "re", "pathlib", "typing", "socket", "dataclasses",
                           "pygit2"}, sorted(imported)
