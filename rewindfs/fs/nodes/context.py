"""What every node of one mount shares: the store, the caches, the owner, the clock."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rewindfs.fs.blobs import DEFAULT_MEMORY, DEFAULT_SPOOL, BlobReader
from rewindfs.fs.cache import LruCache
from rewindfs.fs.oncelog import OnceLog
from rewindfs.fs.trim import BuiltDirs
from rewindfs.store.history import ObjectReader, StoreBrowser, TreeEntry

MiB = 1024 * 1024
DEFAULT_BLOB_CACHE = DEFAULT_MEMORY
LISTING_CACHE_ENTRIES = 200_000  # tree entries kept parsed (a few tens of MiB at most)
# Listings prepared for the kernel (entries with their nodes and attributes, ~1 KiB each:
# they keep their nodes alive, so fewer: fs.trim)
PREPARED_ENTRIES = 50_000
REFRESH_INTERVAL = 1.0  # seconds: how stale the project and checkpoint lists may get
PRIVATE_MASK = 0o700  # group and other bits off: only the store's owner reads checkpoints
log = logging.getLogger("rewindfs.fs")


@dataclass
class Context:
    browser: StoreBrowser
    blob_cache_bytes: int = DEFAULT_BLOB_CACHE
    spool_bytes: int = DEFAULT_SPOOL
    refresh_interval: float = REFRESH_INTERVAL
    only_project: str | None = None  # h16: show just this project
    only_workdir: Path | None = None  # ... at this directory (other agents' too)
    clock: Callable[[], float] = time.monotonic
    share_modes: bool = True  # stored group/other bits (False: the owner's only)
    watched: bool = False  # lists are refreshed by a watch.Watcher, not on access
    mount_mode: str = ""  # how the mount is served (operations.describe_mode), once mounted

    def __post_init__(self) -> None:
        self.blobs = BlobReader(self.browser, self.blob_cache_bytes, self.spool_bytes,
                                spool_dir=self.browser.layout.base)
        # Consecutive checkpoints share most directories; parse each stored tree once.
        self.listings: LruCache[str, list[TreeEntry]] = LruCache(
            LISTING_CACHE_ENTRIES, lambda entries: max(1, len(entries)))
        # The stored directories whose nodes are kept (fs.trim), shared by every reader.
        self.built = BuiltDirs()
        # Files are shown as the store owner's, whoever serves the mount (often root).
        self.uid, self.gid = self.browser.owner()
        self.mode_mask = 0o777 if self.share_modes else PRIVATE_MASK
        self.started_ns = time.time_ns()
        self.failures = OnceLog(log)  # what went wrong, each said once in the mount log
        self.readers: list[Context] = []  # made by reading_from (shared by all of them)

    def reading_from(self, browser: ObjectReader) -> Context:
        """This context reading trees and blobs through `browser` instead (another agent's
        snapshots), with the same caches, owner and clock: a tree or blob is named by its
        content, whichever object database holds it."""
        other = copy.copy(self)
        other.browser = browser  # type: ignore[assignment]
        other.blobs = BlobReader(browser, spool_dir=self.browser.layout.base,
                                 shared_with=self.blobs)
        self.readers.append(other)
        return other

    def close(self) -> None:
        """Let go of what reading holds open (git processes), this context's and those
        reading_from made."""
        for context in [*self.readers, self]:
            context.blobs.close()
            context.browser.close()

    def blob(self, oid: str, size: int = 0) -> bytes:
        return self.blobs.whole(oid, size)

    def tree(self, tree_id: str) -> list[TreeEntry]:
        return self.listings.get_or_load(tree_id, self.browser.tree)

    def is_stale(self, refreshed_at: float | None) -> bool:
        """Whether a project or checkpoint list should be re-read before answering. Under
        a watcher (watch.Watcher) only the first time: the watcher re-reads them and
        tells the kernel what changed, so nothing else may change them under it."""
        if refreshed_at is None:
            return True
        return not self.watched and self.clock() - refreshed_at >= self.refresh_interval
