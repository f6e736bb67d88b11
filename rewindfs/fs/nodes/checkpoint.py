"""A checkpoint's directory: its stored tree, its time as mtime, its metadata as xattrs.

Agent state documents and external actions (store.history.metadata.meta) are xattrs too
(`user.rewind.state.<name>`, `user.rewind.actions`, JSON), so they sit beside the
tree without being files in it: `diff -r` of two checkpoints never sees them.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from rewindfs.fs.inodes import inode_for
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.tree import Previous, TreeDir
from rewindfs.store.history import Checkpoint, CheckpointMeta

XATTR_PREFIX = b"user.rewind."
XATTR_VALUE_MAX = 65536  # Linux refuses larger xattr values; bigger documents are left out
TRAILER_XATTRS = {b"turn": "Rewind-Turn", b"step": "Rewind-Step", b"phase": "Rewind-Phase"}
META_XATTRS = (XATTR_PREFIX + b"state.", XATTR_PREFIX + b"actions")  # read from the note


def stable_name(checkpoint: Checkpoint) -> str:
    """`2026-11-22T063512-1a2b3c4d`: local time as recorded, then the short hash.

    Colon-free (safe in Windows shares, `scp`, Makefiles) and the same for the
    checkpoint's whole life, unlike its number.
    """
    tz = timezone(timedelta(minutes=checkpoint.offset))
    when = datetime.fromtimestamp(checkpoint.time, tz).strftime("%Y-%m-%dT%H%M%S")
    return f"{when}-{checkpoint.short}"


class CheckpointDir(TreeDir):
    def __init__(self, context: Context, h16: str, checkpoint: Checkpoint,
                 previous: Previous | None = None):
        super().__init__(context, checkpoint.id, b"", checkpoint.tree_id,
                         checkpoint.time * 1_000_000_000,
                         inode=inode_for("checkpoint", h16, checkpoint.id), previous=previous)
        self.h16 = h16
        self.checkpoint = checkpoint
        self._meta: CheckpointMeta | None = None

    def update(self, checkpoint: Checkpoint) -> None:
        """Take newer metadata for the same commit (labels come and go; a note may
        land just after its checkpoint)."""
        self.checkpoint = checkpoint
        self._meta = None

    def xattrs(self) -> dict[bytes, bytes]:
        return {**self._own_xattrs(), **self._meta_xattrs()}

    def xattr(self, name: bytes) -> bytes | None:
        """By name: only the agent state and actions need the checkpoint's notes."""
        if name.startswith(META_XATTRS):
            return self._meta_xattrs().get(name)
        return self._own_xattrs().get(name)

    def xattrs_ready(self, name: bytes | None = None) -> bool:
        return self._meta is not None or (name is not None and not name.startswith(META_XATTRS))

    def _own_xattrs(self) -> dict[bytes, bytes]:
        """What the commit itself says (no note needed)."""
        cp = self.checkpoint
        values = {
            b"reason": cp.reason,
            b"time": cp.timestamp,
            b"hash": cp.id,
        }
        if cp.labels:
            values[b"label"] = ",".join(cp.labels)
        values.update({k: cp.trailers[t] for k, t in TRAILER_XATTRS.items() if t in cp.trailers})
        return _encoded(values)

    def _meta_xattrs(self) -> dict[bytes, bytes]:
        """The agent state documents and external actions, from the checkpoint's note."""
        meta = self.meta()
        values = {b"state." + name.encode(): _json(doc) for name, doc in meta.state.items()}
        if meta.actions:
            values[b"actions"] = _json([a.to_json() for a in meta.actions])
        return _encoded(values)

    def meta(self) -> CheckpointMeta:
        if self._meta is None:
            doc = self.context.browser.note(self.h16, self.checkpoint.id)
            self._meta = CheckpointMeta.from_json(doc)
        return self._meta


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _encoded(values: dict[bytes, str]) -> dict[bytes, bytes]:
    encoded = {XATTR_PREFIX + k: v.encode() for k, v in values.items()}
    return {k: v for k, v in encoded.items() if len(v) <= XATTR_VALUE_MAX}
