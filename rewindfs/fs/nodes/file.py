"""A stored regular file: its blob's bytes, size and exec bit, and the time of the
checkpoint that recorded these bytes (see tree.TreeDir)."""

from __future__ import annotations

import stat

from rewindfs.fs.inodes import inode_for
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.node import Attributes, File

INLINE_READ_LIMIT = 128 * 1024  # stock mode: blobs up to this size go with the open


class BlobFile(File):
    def __init__(self, context: Context, oid: str, executable: bool, size: int, mtime_ns: int):
        super().__init__(context, inode_for("file", oid, executable, mtime_ns))
        self.oid = oid
        self.executable = executable
        self.size = size
        self.mtime_ns = mtime_ns

    def attributes(self) -> Attributes:
        mode = stat.S_IFREG | (0o755 if self.executable else 0o644)
        return self._attrs(mode, self.size, self.mtime_ns)

    def data(self) -> bytes:
        """The whole content (only for small files: big ones are read in pieces)."""
        return self.context.blob(self.oid, self.size)

    def read(self, offset: int, size: int) -> bytes:
        if offset >= self.size:
            return b""
        return self.context.blobs.read(self.oid, self.size, offset, size)

    def cheap(self) -> bool:
        return self.oid in self.context.blobs.memory
