"""A checkpoint's directory: its stored tree, its time as mtime, its metadata as xattrs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rewindfs.fs.context import Context
from rewindfs.fs.inodes import inode_for
from rewindfs.fs.tree import TreeDir
from rewindfs.store.history import Checkpoint

XATTR_PREFIX = b"user.rewind."


def stable_name(checkpoint: Checkpoint) -> str:
    """`2026-11-22T063512-1a2b3c4d`: local time as recorded, then the short hash.

    Colon-free (safe in Windows shares, `scp`, Makefiles) and the same for the
    checkpoint's whole life, unlike its number.
    """
    tz = timezone(timedelta(minutes=checkpoint.offset))
    when = datetime.fromtimestamp(checkpoint.time, tz).strftime("%Y-%m-%dT%H%M%S")
    return f"{when}-{checkpoint.short}"


class CheckpointDir(TreeDir):
    def __init__(self, context: Context, h16: str, checkpoint: Checkpoint):
        super().__init__(context, checkpoint.id, b"", checkpoint.tree_id,
                         checkpoint.time * 1_000_000_000,
                         inode=inode_for("checkpoint", h16, checkpoint.id))
        self.h16 = h16
        self.checkpoint = checkpoint

    def update(self, checkpoint: Checkpoint) -> None:
        """Take newer metadata for the same commit (labels come and go)."""
        self.checkpoint = checkpoint

    def xattrs(self) -> dict[bytes, bytes]:
        cp = self.checkpoint
        values = {
            b"reason": cp.reason,
            b"time": cp.timestamp,
            b"hash": cp.id,
        }
        if cp.labels:
            values[b"label"] = ",".join(cp.labels)
        return {XATTR_PREFIX + k: v.encode() for k, v in values.items()}
