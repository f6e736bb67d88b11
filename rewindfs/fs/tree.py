"""A stored directory inside a checkpoint: exactly the tree git holds."""

from __future__ import annotations

import threading

from rewindfs.fs.context import Context
from rewindfs.fs.file import BlobFile
from rewindfs.fs.inodes import inode_for
from rewindfs.fs.link import StoredSymlink
from rewindfs.fs.node import DIR_MODE, Attributes, Directory, Node
from rewindfs.store.browse import EntryKind, TreeEntry


class TreeDir(Directory):
    """Directory `path` of checkpoint `commit`; `tree_id` None is an empty directory (a gitlink).

    Directory inodes are per checkpoint and path (a directory cannot have two
    parents); the files in them share inodes across checkpoints.
    """

    def __init__(self, context: Context, commit: str, path: bytes, tree_id: str | None,
                 mtime_ns: int, inode: int | None = None):
        super().__init__(context, inode or inode_for("tree", commit, path))
        self.commit = commit
        self.path = path
        self.tree_id = tree_id
        self.mtime_ns = mtime_ns
        self._entries: list[tuple[bytes, Node]] | None = None
        self._by_name: dict[bytes, Node] = {}
        self._lock = threading.Lock()

    def attributes(self) -> Attributes:
        return self._attrs(DIR_MODE, 0, self.mtime_ns)

    def entries_ready(self) -> bool:
        return self._entries is not None

    def entries(self) -> list[tuple[bytes, Node]]:
        if self._entries is None:
            listing = self.context.tree(self.tree_id) if self.tree_id else []
            entries = [(e.name, self._child(e)) for e in listing]
            with self._lock:
                if self._entries is None:
                    self._by_name = dict(entries)
                    self._entries = entries
        return self._entries

    def lookup(self, name: bytes) -> Node | None:
        self.entries()
        return self._by_name.get(name)

    def _child(self, entry: TreeEntry) -> Node:
        ctx = self.context
        if entry.kind is EntryKind.FILE:
            return BlobFile(ctx, entry.oid, entry.executable, entry.size)
        if entry.kind is EntryKind.SYMLINK:
            return StoredSymlink(ctx, entry.oid, entry.size)
        path = self.path + b"/" + entry.name if self.path else entry.name
        tree_id = entry.oid if entry.kind is EntryKind.DIRECTORY else None
        return TreeDir(ctx, self.commit, path, tree_id, self.mtime_ns)
