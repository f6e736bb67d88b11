"""The checkpoint a hook takes: a step of the agent's turn, named after what runs next.

It goes through the agent layer's steps (`begin`), so `rewind revert TURN` and `rewind redo`
work on hook turns exactly as on the Python API's, and the checkpoint's trailers say which
agent and session it protects. A checkpoint whose files are as the newest one has them
writes nothing (the step is still logged against the newest checkpoint).
"""

from __future__ import annotations

from typing import Any

from rewindfs import config
from rewindfs.agent.manager import CheckpointManager
from rewindfs.hooks.payloads import ToolCall

AGENT_TRAILER, SESSION_TRAILER = "Rewind-Agent", "Rewind-Session"


def take(call: ToolCall, reason: str, turn: str) -> dict[str, Any]:
    settings = config.load(None, {})
    manager = CheckpointManager(
        enabled=True, max_snapshots=settings.max_snapshots,
        max_total_size_mb=settings.max_total_size_mb, max_file_size_mb=settings.max_file_size_mb,
        base=settings.base, max_files=settings.max_files,
        extra_excludes=settings.extra_excludes)
    workdir = manager.get_working_dir_for_path(call.cwd)
    result = manager.steps.begin(
        workdir, f"{call.agent}:{call.call}", turn, reason=reason,
        trailers={AGENT_TRAILER: call.agent, SESSION_TRAILER: call.session})
    manager.maybe_auto_prune()
    return {**result, "directory": workdir}
