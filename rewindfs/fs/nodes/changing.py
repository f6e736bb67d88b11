"""Directories whose names change while the mount lives: the root and `@REMOTE/`
(fs.nodes.listed), each project (its checkpoints), and other agents' folders. Each is read
again when older than the refresh interval (or when the watcher says so), under a
lock, only when what it is made of changed (`_signature`); a read that fails keeps
what was shown (the error is logged; the store's own directories fail the request
instead), and the directory's mtime moves whenever its names do, so a kernel that
cached the listing sees it as modified."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from rewindfs.errors import RewindError
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.node import DIR_MODE, Attributes, Directory, Node

log = logging.getLogger(__name__)


class ChangingDir(Directory):
    immutable = False
    stable_entries = False
    keeps_listing_on_error = True  # False: a read that fails fails the request

    def __init__(self, context: Context, inode: int):
        super().__init__(context, inode)
        self._entries: list[tuple[bytes, Node]] = []
        self._by_name: dict[bytes, Node] = {}
        self._refreshed_at: float | None = None
        self._seen: object = None
        self._changed_ns = 0
        self._lock = threading.Lock()

    def attributes(self) -> Attributes:
        self._refresh()
        return self._attrs(DIR_MODE, 0, self._changed_ns or self.context.started_ns)

    def entries_ready(self) -> bool:
        return not self.context.is_stale(self._refreshed_at)

    def entries(self) -> list[tuple[bytes, Node]]:
        self._refresh()
        return self._entries

    def lookup(self, name: bytes) -> Node | None:
        self._refresh()
        return self._by_name.get(name)

    def names(self) -> dict[bytes, int]:
        """Name -> inode of every entry now (what the kernel may have cached)."""
        return {name: node.inode for name, node in self._entries}

    def refresh(self) -> None:
        """Read it again now (if what it is made of changed)."""
        self._refresh(force=True)

    def loaded(self) -> bool:
        return self._refreshed_at is not None

    def _refresh(self, force: bool = False, **given: Any) -> None:
        if not force and not self.context.is_stale(self._refreshed_at):
            return
        with self._lock:
            if not force and not self.context.is_stale(self._refreshed_at):
                return
            signature = self._signature()
            if signature is None or signature != self._seen or self._refreshed_at is None:
                before = self.names()
                try:
                    entries = self._read(**given)
                except RewindError as exc:  # locked, unreadable: keep what was shown
                    if not self.keeps_listing_on_error:
                        raise
                    log.warning("%s", exc)
                else:
                    self._entries, self._by_name = entries, dict(entries)
                    self._seen = signature
                if self._refreshed_at is not None and self.names() != before:
                    self._changed_ns = time.time_ns()
            self._refreshed_at = self.context.clock()

    def _signature(self) -> object:
        """What the entries are made of (equal: no need to read them); None: always read."""
        return None

    def _read(self, **given: Any) -> list[tuple[bytes, Node]]:
        """The entries as they are now (called under the lock; `given`: what the caller
        of `_refresh` already read for it)."""
        raise NotImplementedError
