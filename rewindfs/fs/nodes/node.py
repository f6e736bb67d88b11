"""What every browsable node offers; one module per kind of node implements it.

Nodes are plain Python over `rewindfs.store.history.files.browse`, so the whole filesystem can be
exercised without a kernel; the pyfuse3 adapter only translates.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass

from rewindfs.fs.nodes.context import Context

DIR_MODE = stat.S_IFDIR | 0o755
LINK_MODE = stat.S_IFLNK | 0o777


@dataclass(frozen=True)
class Attributes:
    inode: int
    mode: int  # st_mode, file type included
    size: int
    mtime_ns: int
    uid: int
    gid: int

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)


class Node:
    """Anything with attributes. `immutable`: they never change (kernel may cache them long)."""

    immutable = True

    def __init__(self, context: Context, inode: int):
        self.context = context
        self.inode = inode

    def attributes(self) -> Attributes:
        raise NotImplementedError

    def xattrs(self) -> dict[bytes, bytes]:
        """Extended attributes (name -> value); most nodes have none."""
        return {}

    def xattr(self, name: bytes) -> bytes | None:
        """One extended attribute (None: there is none of that name)."""
        return self.xattrs().get(name)

    def xattrs_ready(self, name: bytes | None = None) -> bool:
        """True when xattr(name) (xattrs() for None) answers without touching the store."""
        return True

    def _attrs(self, mode: int, size: int, mtime_ns: int) -> Attributes:
        if not stat.S_ISLNK(mode):  # a link's own bits mean nothing
            mode = stat.S_IFMT(mode) | (stat.S_IMODE(mode) & self.context.mode_mask)
        return Attributes(self.inode, mode, size, mtime_ns, self.context.uid, self.context.gid)


class Directory(Node):
    """A node with named children. `stable_entries`: names and their nodes never change."""

    stable_entries = True

    def entries(self) -> list[tuple[bytes, Node]]:
        raise NotImplementedError

    def lookup(self, name: bytes) -> Node | None:
        for entry_name, node in self.entries():
            if entry_name == name:
                return node
        return None

    def entries_ready(self) -> bool:
        """True when entries() answers without touching the store (no worker thread needed)."""
        return False

    def prefetch(self) -> None:
        """Start reading what is likely to be read next (the directory is being listed)."""

    def listed(self) -> list[tuple[int, bytes]]:
        """The listing's last entries are on their way to the kernel: the files read ahead,
        (inode, bytes), to put in its page cache once it knows them (fs.blobs)."""
        return []


class File(Node):
    def data(self) -> bytes:
        raise NotImplementedError

    def read(self, offset: int, size: int) -> bytes:
        return self.data()[offset:offset + size]

    def cheap(self) -> bool:
        """True when read() answers from memory (no worker thread needed)."""
        return False


class Symlink(Node):
    def target(self) -> bytes:
        raise NotImplementedError
