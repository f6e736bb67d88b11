"""A stored regular file: its blob's bytes, size and exec bit."""

from __future__ import annotations

import stat

from rewindfs.fs.context import Context
from rewindfs.fs.inodes import inode_for
from rewindfs.fs.node import Attributes, File


class BlobFile(File):
    def __init__(self, context: Context, oid: str, executable: bool, size: int):
        super().__init__(context, inode_for("file", oid, executable))
        self.oid = oid
        self.executable = executable
        self.size = size

    def attributes(self) -> Attributes:
        mode = stat.S_IFREG | (0o755 if self.executable else 0o644)
        return self._attrs(mode, self.size, self.context.file_mtime_ns)

    def data(self) -> bytes:
        """The whole content (cached unless it is too big to keep)."""
        return self.context.blob(self.oid, self.size)
