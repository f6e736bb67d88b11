"""A stored directory inside a checkpoint: exactly the tree git holds.

Git keeps no file times, so a file shows the time of the checkpoint that recorded
its bytes: the oldest of the unbroken run of checkpoints (each the previous one's
parent) that hold the same blob at the same path. A file unchanged between two
checkpoints is then the very same node in both (same inode, same mtime): `diff -r`
between them skips it without reading, and `cp -a`/`rsync -a` copy a time that says
when the content was last captured, not when the store was made.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from rewindfs.fs.inodes import inode_for
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.file import BlobFile
from rewindfs.fs.nodes.link import StoredSymlink
from rewindfs.fs.nodes.node import DIR_MODE, Attributes, Directory, Node
from rewindfs.fs.walkahead import Wanted
from rewindfs.store.history import EntryKind, TreeEntry

MAX_LINEAGE = 100  # checkpoints looked back through for a file's time

Previous = Callable[[], "TreeDir | None"]


class TreeDir(Directory):
    """Directory `path` of checkpoint `commit`; `tree_id` None is an empty directory (a gitlink).

    Directory inodes are per checkpoint and path (a directory cannot have two
    parents); the files in them share inodes across checkpoints. `previous` gives
    the same path in the previous checkpoint, if there is one.
    """

    def __init__(self, context: Context, commit: str, path: bytes, tree_id: str | None,
                 mtime_ns: int, inode: int | None = None, previous: Previous | None = None,
                 parent: tuple[int, bytes] | None = None):
        super().__init__(context, inode or inode_for("tree", commit, path))
        self.commit = commit
        self.path = path
        self.tree_id = tree_id
        self.mtime_ns = mtime_ns
        self.parent = parent  # (the parent directory's inode, this one's name there)
        self._previous = previous
        # (entries, by name), made together and dropped together (fs.trim: a walk of a
        # tree with millions of directories keeps only the last ones listed)
        self._built: tuple[list[tuple[bytes, Node]], dict[bytes, Node]] | None = None
        self._lock = threading.Lock()

    def attributes(self) -> Attributes:
        return self._attrs(DIR_MODE, 0, self.mtime_ns)

    def entries_ready(self) -> bool:
        return self._built is not None

    def entries(self) -> list[tuple[bytes, Node]]:
        return self._listing()[0]

    def _listing(self) -> tuple[list[tuple[bytes, Node]], dict[bytes, Node]]:
        built = self._built
        if built is None:
            # Oldest first, without recursion: each directory's files come from its
            # predecessor's, so the run of not-yet-listed predecessors is listed first.
            behind: list[TreeDir] = []
            older = self.previous()
            while older is not None and not older.entries_ready() and len(behind) < MAX_LINEAGE:
                behind.append(older)
                older = older.previous()
            for directory in reversed(behind):
                directory._build()
            built = self._build()
        self.context.built.touch(self)
        return built

    def drop(self) -> None:
        """Let go of the listing and the nodes in it (listed again when asked)."""
        with self._lock:
            self._built = None

    def _build(self) -> tuple[list[tuple[bytes, Node]], dict[bytes, Node]]:
        built = self._built
        if built is not None:
            return built
        listing = self.context.tree(self.tree_id) if self.tree_id else []
        before = self.previous()
        known = before._built if before is not None else None  # past MAX_LINEAGE: None,
        # and this one starts a new lineage
        entries = [(e.name, self._child(e, known[1] if known else None)) for e in listing]
        with self._lock:
            if self._built is None:
                self._built = (entries, dict(entries))
            built = self._built
        self.context.built.touch(self)
        return built

    def lookup(self, name: bytes) -> Node | None:
        return self._listing()[1].get(name)

    def prefetch(self) -> None:
        built = self._built
        if built is not None:
            self.context.blobs.prefetch(_files(built[0]), self.inode, self._below(built[0]))

    def listed(self) -> list[tuple[int, bytes]]:
        built = self._built
        if built is None:
            return []
        return self.context.blobs.listed(_files(built[0]))

    def _below(self, entries: list[tuple[bytes, Node]]) -> Iterator[tuple[int, list[Wanted]]]:
        """The files of each directory below this one, depth first in listing order (the
        order `tar`, `diff -r` and `grep -r` go through them); each listed on the way
        (in the read-ahead thread), so the kernel's listing of it is answered at once."""
        stack = [node for _, node in reversed(entries) if isinstance(node, TreeDir)]
        while stack:
            directory = stack.pop()
            entries = directory.entries()
            yield directory.inode, _files(entries)
            stack += [node for _, node in reversed(entries) if isinstance(node, TreeDir)]

    def previous(self) -> TreeDir | None:
        if self._previous is None:
            return None
        before = self._previous()
        return before if isinstance(before, TreeDir) else None

    def _child(self, entry: TreeEntry, before: dict[bytes, Node] | None) -> Node:
        ctx = self.context
        old = before.get(entry.name) if before is not None else None
        if entry.kind is EntryKind.FILE:
            if isinstance(old, BlobFile) and (old.oid, old.executable) == (entry.oid,
                                                                        entry.executable):
                return old
            return BlobFile(ctx, entry.oid, entry.executable, entry.size, self.mtime_ns)
        if entry.kind is EntryKind.SYMLINK:
            if isinstance(old, StoredSymlink) and old.oid == entry.oid:
                return old
            return StoredSymlink(ctx, entry.oid, entry.size, self.mtime_ns)
        path = self.path + b"/" + entry.name if self.path else entry.name
        tree_id = entry.oid if entry.kind is EntryKind.DIRECTORY else None
        previous = (lambda: old) if isinstance(old, TreeDir) else None
        return TreeDir(ctx, self.commit, path, tree_id, self.mtime_ns, previous=previous,
                       parent=(self.inode, entry.name))


def _files(entries: list[tuple[bytes, Node]]) -> list[Wanted]:
    return [(node.oid, node.size, node.inode) for _, node in entries
            if isinstance(node, BlobFile)]
