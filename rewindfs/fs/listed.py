"""A directory whose names come from the store's refs and are re-read when stale: the mount's
top directory and each `@REMOTE/` directory (a project's directory has its own listing)."""

from __future__ import annotations

import threading
import time
from typing import Any

from rewindfs.fs.context import Context
from rewindfs.fs.node import DIR_MODE, Attributes, Directory, Node
from rewindfs.fs.project import ProjectDir


class ListedDir(Directory):
    immutable = False
    stable_entries = False

    def __init__(self, context: Context, inode: int):
        super().__init__(context, inode)
        self._entries: list[tuple[bytes, Node]] = []
        self._by_name: dict[bytes, Node] = {}
        self._refreshed_at: float | None = None
        self._changed_ns = 0
        self._lock = threading.Lock()

    def attributes(self) -> Attributes:
        return self._attrs(DIR_MODE, 0, self._changed_ns or self.context.started_ns)

    def names(self) -> dict[bytes, int]:
        """Name -> inode of every entry now (what the kernel may have cached)."""
        return {name: node.inode for name, node in self._entries}

    def projects(self) -> dict[bytes, ProjectDir]:
        return {name: node for name, node in self._entries if isinstance(node, ProjectDir)}

    def entries_ready(self) -> bool:
        return not self.context.is_stale(self._refreshed_at)

    def entries(self) -> list[tuple[bytes, Node]]:
        self._refresh()
        return self._entries

    def lookup(self, name: bytes) -> Node | None:
        self._refresh()
        return self._by_name.get(name)

    def _read(self, **given: Any) -> list[tuple[bytes, Node]]:
        """The entries as the store has them now (called under the lock)."""
        raise NotImplementedError

    def _refresh(self, force: bool = False, **given: Any) -> None:
        ctx = self.context
        if not force and not ctx.is_stale(self._refreshed_at):
            return
        with self._lock:
            if not force and not ctx.is_stale(self._refreshed_at):
                return
            entries = self._read(**given)
            before = self.names()
            self._entries, self._by_name = entries, dict(entries)
            if self._refreshed_at is not None and self.names() != before:
                self._changed_ns = time.time_ns()
            self._refreshed_at = ctx.clock()


def project_dir(context: Context, known: dict[str, ProjectDir], key: str, workdir
                ) -> ProjectDir:
    """The node of project `key` (a local hash or a fetched project's key), the one shown
    before when it still names the same directory, so it outlives renumbering."""
    node = known.get(key)
    return node if node is not None and node.workdir == workdir \
        else ProjectDir(context, key, workdir)
