"""The checkpoint a hook takes: a step of the agent's turn, named after what runs next.

It goes through the agent layer's steps (`begin`), so `rewind revert TURN` and `rewind redo`
work on hook turns exactly as on the Python API's, and the checkpoint's trailers say which
agent and session it protects. A checkpoint whose files are as the newest one has them
writes nothing (the step is still logged against the newest checkpoint). Afterwards it
leaves a store.stamp, so the next hook call with nothing changed (hooks.fast) needs no
repository at all.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rewindfs import config
from rewindfs.agent.manager import CheckpointManager
from rewindfs.hooks.fast import settings_key
from rewindfs.hooks.payloads import ToolCall
from rewindfs.store.history import stamp

AGENT_TRAILER, SESSION_TRAILER = "Rewind-Agent", "Rewind-Session"


def take(call: ToolCall, reason: str, turn: str) -> dict[str, Any]:
    settings = config.load(None, {})
    manager = CheckpointManager(
        enabled=True, max_snapshots=settings.max_snapshots,
        max_total_size_mb=settings.max_total_size_mb, max_file_size_mb=settings.max_file_size_mb,
        base=settings.base, max_files=settings.max_files,
        extra_excludes=settings.extra_excludes)
    workdir = manager.get_working_dir_for_path(call.cwd)
    started = time.time_ns()
    result = manager.steps.begin(
        workdir, f"{call.agent}:{call.call}", turn, reason=reason,
        trailers={AGENT_TRAILER: call.agent, SESSION_TRAILER: call.session})
    taken = manager.last_result
    manager.maybe_auto_prune()
    if taken is not None and taken.commit and taken.tree:
        key = settings_key(Path(workdir))
        in_background(lambda: stamp.record(manager.layout.store, taken.project, Path(workdir),
                                           taken.commit, taken.tree, started, key))
    return {**result, "directory": workdir}


def in_background(work) -> None:
    """Run `work` in a detached child, so the agent does not wait for it.

    Safe for the stamp: it judges every file by metadata against the time the capture
    started, so whatever the agent changes meanwhile (the very command this hook ran
    before) leaves no stamp rather than a wrong one. The child holds none of the agent's
    pipes (the agent waits for those to close) and leaves the hook's session.
    """
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        return
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        work()
    except BaseException:  # noqa: BLE001 - a child with no one to tell
        pass
    finally:
        os._exit(0)
