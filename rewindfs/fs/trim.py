"""Bounded memory for a mount walked end to end, however many directories a tree holds.

A checkpoint fetched from a remote can hold 4.3 billion paths in nine tree objects
(store.history.bounds), and `find` goes through them all. Two things would keep what
it went through, for ever:

* the nodes: each stored directory listed keeps the nodes of its entries. `BuiltDirs`
  keeps only the last BUILT_DIRS directories listed; an older one lets go of its
  listing and lists it again when it is asked (the same names, inodes and times:
  everything in a listing comes from the tree and its predecessors);
* the kernel: it keeps a name it looked up (and so a lookup count on its inode, and
  the node in the inode table) until it runs short of memory. `Trimmer` asks it, from
  a thread of its own, to drop the oldest stored directories it holds once the table
  holds more than TABLE_LIMIT nodes (`invalidate_entry` of the name in its parent):
  it forgets what is not in use below them, and the table lets go of those nodes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from rewindfs.fs.periodic import Periodic

log = logging.getLogger(__name__)
BUILT_DIRS = 2_000  # stored directories kept listed (their nodes: a few KiB each)
TABLE_LIMIT = 100_000  # nodes the kernel may hold before the oldest are dropped
TRIM_TO = 3 * TABLE_LIMIT // 4
RETRY_AFTER = 30.0  # seconds before a name the kernel kept (in use) is asked about again


class BuiltDirs:
    """The stored directories listed last; past `limit`, the oldest lets go of its
    listing (TreeDir.drop)."""

    def __init__(self, limit: int = BUILT_DIRS):
        self.limit = limit
        self._dirs: OrderedDict[int, Any] = OrderedDict()  # fs.nodes.tree.TreeDir (no import:
        # the tree module is the one importing this)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._dirs)

    def touch(self, directory: Any) -> None:
        key = id(directory)
        with self._lock:
            if key in self._dirs:
                self._dirs.move_to_end(key)
                return
            self._dirs[key] = directory
            dropped = [self._dirs.popitem(last=False)[1]
                       for _ in range(len(self._dirs) - self.limit)]
        for old in dropped:
            old.drop()


class Trimmer(Periodic):
    """Keeps the kernel's hold on stored directories (and so the inode table) bounded."""

    name = "rewindfs-trim"

    def __init__(self, table: Any, invalidate_entry: Callable[[int, bytes], None],
                 interval: float = 1.0, limit: int = TABLE_LIMIT):
        super().__init__(interval)
        self.table = table
        self.limit = limit
        self._invalidate = invalidate_entry
        self._tried: dict[int, float] = {}  # inode -> when its name was last dropped

    def failed(self, exc: Exception) -> None:  # a trim is worth trying again, never fatal
        log.debug("trimming the kernel's names failed", exc_info=exc)

    def tick(self) -> int:
        """Drop the oldest stored directories the kernel holds, while it holds too many;
        how many names were dropped."""
        excess = len(self.table) - TRIM_TO * self.limit // TABLE_LIMIT
        if len(self.table) <= self.limit or excess <= 0:
            return 0
        now = time.monotonic()
        self._tried = {i: t for i, t in self._tried.items() if now - t < RETRY_AFTER}
        dropped = 0
        for inode, node in self.table.oldest(excess + len(self._tried)):
            if self._stop.is_set() or dropped >= excess:
                break
            parent = getattr(node, "parent", None)  # a stored directory's (fs.nodes.tree.TreeDir)
            if inode in self._tried or not isinstance(parent, tuple):
                continue
            self._tried[inode] = now
            try:
                self._invalidate(*parent)
            except OSError:
                continue  # the kernel holds nothing of it any more
            dropped += 1
        return dropped
