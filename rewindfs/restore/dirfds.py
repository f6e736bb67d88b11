"""Directory descriptors below one root, opened without following a link, and kept few.

Every directory is opened relative to its parent with O_NOFOLLOW, starting from a
descriptor of the root, so a symlink in the working tree can never redirect a write
elsewhere (restore.fdtree). At most OPEN_DIRS descriptors stay open (a restore touching
thousands of directories must not run out of them), least recently used first to go,
but for anchors: every ANCHORth level of a deep tree stays open, so going back up a
tree 20,000 levels deep opens at most ANCHOR levels again, never the whole way down.
"""

from __future__ import annotations

import errno
import os
from collections import OrderedDict

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
OPEN_DIRS = 64  # directory descriptors kept open at most, but anchors:
ANCHOR = 64  # every 64th level of a deep tree stays open (MAX_ANCHORS at most)
MAX_ANCHORS = 512


class UnsafePath(OSError):
    """A path component that is not a real directory (a symlink, a file)."""


class DirFds:
    def __init__(self, root: bytes):
        self.root_fd = os.open(root, DIR_FLAGS)
        self.fds: OrderedDict[bytes, int] = OrderedDict()  # least recently used first
        self.anchors: dict[bytes, int] = {b"": self.root_fd}  # never closed until close()
        self.created: list[bytes] = []  # directories made here (create=True)
        self.dirty: set[bytes] = set()  # directories whose names changed

    def close(self) -> None:
        for fd in [*self.fds.values(), *self.anchors.values()]:
            os.close(fd)
        self.fds.clear()
        self.anchors.clear()

    def open(self, rel_dir: bytes, *, create: bool) -> int:
        """A descriptor of the directory, valid until the next call (older ones may be
        closed to stay under OPEN_DIRS). Opened down from its parent or nearest anchor,
        one level at a time, without recursion: a tree 20,000 levels deep is data."""
        fd = self._held(rel_dir)
        if fd is not None:
            return fd
        parent = rel_dir.rpartition(b"/")[0]
        parent_fd = self._held(parent)
        if parent_fd is not None:
            return self._open_child(parent, parent_fd, rel_dir, create)
        cuts = [i for i, byte in enumerate(rel_dir) if byte == 0x2F] + [len(rel_dir)]
        start = 0  # levels above the nearest anchor held open
        for depth in range((len(cuts) - 1) // ANCHOR * ANCHOR, 0, -ANCHOR):
            if rel_dir[:cuts[depth - 1]] in self.anchors:
                start = depth
                break
        parent = rel_dir[:cuts[start - 1]] if start else b""
        fd = self.anchors[parent]
        for depth in range(start, len(cuts)):
            rel = rel_dir[:cuts[depth]]
            held = self._held(rel)
            fd = held if held is not None else self._open_child(parent, fd, rel, create)
            parent = rel
        return fd

    def forget(self, rel_dir: bytes) -> None:
        fd = self.fds.pop(rel_dir, None)
        if fd is None:
            fd = self.anchors.pop(rel_dir, None) if rel_dir else None
        if fd is not None:
            os.close(fd)

    def _held(self, rel: bytes) -> int | None:
        fd = self.anchors.get(rel)
        if fd is None:
            fd = self.fds.get(rel)
            if fd is not None:
                self.fds.move_to_end(rel)
        return fd

    def _open_child(self, parent: bytes, parent_fd: int, rel_dir: bytes, create: bool) -> int:
        name = rel_dir.rpartition(b"/")[2]
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            # Private until finish() gives it its mode: never wider meanwhile, and
            # writable by us even when its final mode is read-only.
            os.mkdir(name, 0o700, dir_fd=parent_fd)
            self.created.append(rel_dir)
            self.dirty.add(parent)
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafePath(exc.errno, "a symlink or file is in the way", rel_dir) from exc
            raise
        if (rel_dir.count(b"/") + 1) % ANCHOR == 0 and len(self.anchors) <= MAX_ANCHORS:
            self.anchors[rel_dir] = fd
            return fd
        self.fds[rel_dir] = fd
        while len(self.fds) > OPEN_DIRS:  # the parent's may go: the child is open already
            os.close(self.fds.popitem(last=False)[1])
        return fd
