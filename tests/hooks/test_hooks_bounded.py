"""What an agent hands the hook is bounded (issue 33, case 8): stdin held open after a
whole payload does not hold the hook; a payload that never comes whole, one over the
16 MiB the hook keeps (a large heredoc), and a command too long to classify all fail
safe: the hook checkpoints, and its reason says why."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from hookproc import claude_payload, hook_env, run_hook

from rewindfs.hooks.agents import hook_command

pytestmark = pytest.mark.usefixtures("no_helper_left")
MiB = 1 << 20


def reasons(run_rewind, project: Path) -> list[str]:
    return [cp["reason"] for cp in
            json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)]


def held_open(project: Path, home: Path, data: bytes) -> subprocess.Popen:
    """The hook, its stdin a pipe that stays open after `data`."""
    proc = subprocess.Popen(shlex.split(hook_command("claude-code")), cwd=project,
                            env=hook_env(home, REWIND_HOOK_HELPER="0"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(data)
    proc.stdin.flush()
    return proc


@pytest.fixture
def proj(project: Path) -> Path:
    (project / "package.json").write_text("{}\n")
    return project


def test_stdin_held_open_after_a_whole_payload(proj: Path, home: Path, run_rewind) -> None:
    proc = held_open(proj, home, claude_payload(proj, "rm -rf build"))
    try:
        assert proc.wait(timeout=60) == 0   # it answered, stdin still open: the scenario
        assert proc.stdin is not None and not proc.stdin.closed
    finally:
        proc.kill()
        proc.stdin.close()
    assert reasons(run_rewind, proj) == ["before: rm -rf build"]


def test_a_payload_that_never_comes_whole_is_checkpointed(proj: Path, home: Path,
                                                          run_rewind) -> None:
    whole = claude_payload(proj, "rm -rf build")
    proc = held_open(proj, home, whole[: whole.index(b"rm -rf")])
    try:
        assert proc.wait(timeout=60) == 0 and proc.stderr.read() == b""
    finally:
        proc.kill()
        proc.stdin.close()
    assert reasons(run_rewind, proj) == [
        "before: Bash (its payload did not come whole within 5s: checkpointed to be safe)"]


def test_a_payload_over_16_mib_is_checkpointed(proj: Path, home: Path, run_rewind) -> None:
    heredoc = "cat > data.csv <<'EOF'\n" + "1,2,3,4,5,6,7,8\n" * (17 * MiB // 16) + "EOF"
    payload = claude_payload(proj, heredoc)
    assert len(payload) > 17 * MiB and json.loads(payload)   # whole and valid: the scenario
    run_hook("claude-code", payload, proj, hook_env(home, REWIND_HOOK_HELPER="0"))
    # Over the read, or (on a machine too loaded to pass 17 MiB through a pipe within the
    # read's 5 s) not whole in time: either way a checkpoint, never "not JSON".
    [reason] = reasons(run_rewind, proj)
    over = (f"before: Bash (its {len(payload) / MiB:.1f} MiB payload is over the 16.0 MiB "
            "read: checkpointed to be safe)")
    assert reason == over or reason.startswith("before: ") and reason.endswith(
        "(its payload did not come whole within 5s: checkpointed to be safe)"), reason


def test_a_command_too_long_to_classify_is_checkpointed(proj: Path, home: Path,
                                                        run_rewind) -> None:
    command = "echo " + "a " * (3 * MiB)   # harmless, were it read to its end
    run_hook("claude-code", claude_payload(proj, command), proj,
             hook_env(home, REWIND_HOOK_HELPER="0"))
    [reason] = reasons(run_rewind, proj)
    assert reason.startswith("before: echo a a a ") and reason.endswith(
        "... (a 6.0 MiB command, too long to classify: checkpointed to be safe)"), reason
