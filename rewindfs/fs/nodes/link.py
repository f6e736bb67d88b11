"""Symbolic links: stored ones (target = blob bytes) and the mount's own pointers
(`latest`, `1`, `2`, ... pointing at a checkpoint's stable name)."""

from __future__ import annotations

from rewindfs.fs.inodes import inode_for
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.node import LINK_MODE, Attributes, Symlink


class StoredSymlink(Symlink):
    def __init__(self, context: Context, oid: str, size: int, mtime_ns: int):
        super().__init__(context, inode_for("symlink", oid, mtime_ns))
        self.oid = oid
        self.size = size
        self.mtime_ns = mtime_ns

    def attributes(self) -> Attributes:
        return self._attrs(LINK_MODE, self.size, self.mtime_ns)

    def target(self) -> bytes:
        return self.context.blob(self.oid, self.size)


class PointerLink(Symlink):
    """`<project>/3 -> 2026-11-22T063512-1a2b3c4d`.

    The inode includes the target, so when `3` starts naming another checkpoint
    the kernel sees a new inode rather than a cached old target.
    """

    immutable = False

    def __init__(self, context: Context, h16: str, name: bytes, target: bytes, mtime_ns: int):
        super().__init__(context, inode_for("pointer", h16, name, target))
        self._target = target
        self.mtime_ns = mtime_ns

    def attributes(self) -> Attributes:
        return self._attrs(LINK_MODE, len(self._target), self.mtime_ns)

    def target(self) -> bytes:
        return self._target
