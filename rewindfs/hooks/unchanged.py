"""The hooks' path with nothing to checkpoint: when store.history.stamp proves the project
is still its newest checkpoint (its ref read by libgit2, no object), the agent's step is
logged as beginning there, with no capture and no settings parsed. The project root comes
from the session's memory (hooks.state), set by the checkpoint path (hooks.checkpoint).
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


def log_unchanged(root: str, step_id: str, turn: str, commit: str, tree: str,
                  command: str = "") -> dict[str, Any]:
    """Nothing changed: the step begins at the newest checkpoint, as begin_step logs it.
    `command`: what runs next (the newest checkpoint's left-out files it may destroy)."""
    from rewindfs.agent.stepbegin import append_begin, valid_id
    from rewindfs.hooks import leftout

    step_id, turn = valid_id(step_id, "step"), valid_id(turn, "turn")
    with steplog.session(Layout.for_home(), project_hash(Path(root))) as log:
        append_begin(log, step_id, turn, tree, commit)
    return {"taken": False, "hash": commit, "directory": root, "stamp": True,
            "left_out": leftout.of_project(command, Path(root))}
