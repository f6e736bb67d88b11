"""The hooks' path with nothing to checkpoint: when store.history.stamp proves the project
is still its newest checkpoint (its ref read by libgit2, no object), the agent's step is
logged as beginning there (or, for an after event, its call as ending there), with no
capture and no settings parsed. The project root comes from the session's memory
(hooks.state), set by the checkpoint path (hooks.checkpoint).

The proof is from before the step log's lock was taken; under it the ref is read again,
so a checkpoint another session took meanwhile is never logged after this older state
(the log keeps the sessions' states in the order they were captured): should the ref have
moved, the checkpoint is taken the ordinary way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewindfs.config import capture_key
from rewindfs.store import Layout, project_hash
from rewindfs.store.history import stamp, steplog


def changes(root: str) -> tuple[str, str, list[bytes]] | None:
    """What changed in the project at `root` since its newest checkpoint, by its stamp
    (None: not known, look at everything)."""
    workdir = Path(root)
    return stamp.changes(Layout.for_home().store, project_hash(workdir), workdir,
                         capture_key(workdir))


def log_unchanged(root: str, call: Any, reason: str, turn: str, commit: str, tree: str
                  ) -> dict[str, Any]:
    """Nothing changed: the step begins (or the call ends) at the newest checkpoint, as
    begin_step logs it. `call`: the hook's payloads.ToolCall."""
    from rewindfs.agent.stepbegin import log_call, valid_id
    from rewindfs.hooks import leftout

    step_id, turn = valid_id(f"{call.agent}:{call.call}", "step"), valid_id(turn, "turn")
    layout = Layout.for_home()
    h16 = project_hash(Path(root))
    with steplog.session(layout, h16) as log:
        if stamp.tip(layout.store, h16) == commit:
            log_call(log, call, step_id, turn, tree, commit, root)
            return {"taken": False, "hash": commit, "directory": root, "stamp": True,
                    "left_out": leftout.of_project(call.command, Path(root))}
    from rewindfs.hooks import checkpoint

    return checkpoint.take(call, reason, turn, root)   # another checkpoint came meanwhile

