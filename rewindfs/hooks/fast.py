"""The hooks' path with nothing to checkpoint: when store.stamp proves the project is still
its newest checkpoint, the agent's step is logged as beginning there, without opening the
repository. The project root comes from the session's memory (state), set by the full path.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from rewindfs.hooks import hooklog


def settings_key(root: Path) -> str:
    """What, besides the files, decides what a checkpoint holds: REWIND_* settings, the
    Hermes config file and the project's .git/info/exclude (by metadata: no YAML parsing)."""
    parts = [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("REWIND_")]
    for path in (hooklog.hermes_home() / "config.yaml", root / ".git" / "info" / "exclude"):
        try:
            st = os.stat(path)
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
        except OSError:
            parts.append(f"{path}:-")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def store_dir() -> Path:
    return hooklog.hermes_home() / "checkpoints" / "store"


def changes(root: str) -> tuple[str, str, list[bytes]] | None:
    """What changed in the project since its newest checkpoint, by its stamp (None: not
    known, look at everything)."""
    from rewindfs.store import project_hash
    from rewindfs.store.history import stamp

    workdir = Path(root)
    return stamp.changes(store_dir(), project_hash(workdir), workdir, settings_key(workdir))


def log_unchanged(root: str, step_id: str, turn: str, commit: str, tree: str
                  ) -> dict[str, Any]:
    """Nothing changed: the step begins at the newest checkpoint, as begin_step logs it."""
    from rewindfs.agent.stepbegin import append_begin, valid_id
    from rewindfs.store import Layout, project_hash
    from rewindfs.store.history import steplog

    step_id, turn = valid_id(step_id, "step"), valid_id(turn, "turn")
    with steplog.session(Layout(store_dir().parent), project_hash(Path(root))) as log:
        append_begin(log, step_id, turn, tree, commit)
    return {"taken": False, "hash": commit, "directory": root, "stamp": True}
