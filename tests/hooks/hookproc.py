"""Running the hook exactly as an agent does: the command `rewind hooks install` writes
(hooks.agents.hook_command), a JSON payload on stdin, the project as cwd."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from rewindfs.hooks.agents import hook_command


def claude_payload(cwd: Path, command: str, call: str = "t1", session: str = "s1",
                   tool: str = "Bash", turn: str = "p1", **tool_input: str) -> bytes:
    """A Claude Code PreToolUse payload (as its docs and the real CLI send it)."""
    return json.dumps({
        "session_id": session, "transcript_path": "/dev/null", "cwd": str(cwd),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "prompt_id": turn,
        "tool_name": tool, "tool_input": {"command": command, **tool_input},
        "tool_use_id": call}).encode()


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    """What an agent hands its hooks, in a test: its PATH, a HOME, the test's HERMES_HOME."""
    return {"PATH": os.environ["PATH"], "HOME": str(home.parent), "HERMES_HOME": str(home),
            "LANG": "C.UTF-8", **extra}


def run_hook(agent: str, payload: bytes, cwd: Path, env: dict[str, str],
             timeout: float = 120, **popen) -> subprocess.CompletedProcess:
    """The installed command, run to its end; it must exit 0 with nothing on stderr."""
    done = subprocess.run(shlex.split(hook_command(agent)), input=payload, cwd=cwd, env=env,
                          capture_output=True, timeout=timeout, **popen)
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode(errors="replace")
    return done


def log_lines(home: Path) -> list[str]:
    path = home / "rewind-hooks" / "hook.log"
    return path.read_text().splitlines() if path.exists() else []


def auto_push_to(remote: Path, home: Path, run_rewind) -> None:
    """A bare repository at `remote`, added as remote origin, with every checkpoint pushed
    to it at once (auto_push, no delay) under `home`."""
    from conftest import isolated_git_env

    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True,
                   env=isolated_git_env())
    run_rewind("remote", "add", "origin", str(remote), check=True)
    (home / "config.yaml").write_text("checkpoints:\n  auto_push: origin\n"
                                      "  auto_push_delay: 0\n")
