"""What every node of one mount shares: the store, the caches, the owner, the clock."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rewindfs.fs.cache import LruCache
from rewindfs.store.browse import StoreBrowser, TreeEntry

MiB = 1024 * 1024
DEFAULT_BLOB_CACHE = 64 * MiB
LISTING_CACHE_ENTRIES = 200_000  # tree entries kept parsed (a few tens of MiB at most)
REFRESH_INTERVAL = 1.0  # seconds: how stale the project and checkpoint lists may get


@dataclass
class Context:
    browser: StoreBrowser
    blob_cache_bytes: int = DEFAULT_BLOB_CACHE
    refresh_interval: float = REFRESH_INTERVAL
    only_project: str | None = None  # h16: show just this project
    clock: Callable[[], float] = time.monotonic
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)

    def __post_init__(self) -> None:
        # A quarter of the cache at most per blob: one big file must not evict all the rest.
        self.blobs: LruCache[str, bytes] = LruCache(
            self.blob_cache_bytes, len, largest=self.blob_cache_bytes // 4)
        # Consecutive checkpoints share most directories; parse each stored tree once.
        self.listings: LruCache[str, list[TreeEntry]] = LruCache(
            LISTING_CACHE_ENTRIES, lambda entries: max(1, len(entries)))
        # Git keeps no file times, and a per-checkpoint time would stop identical files
        # from sharing an inode; files show when the store was created.
        self.file_mtime_ns = int(self.browser.created_time() * 1e9)
        self.started_ns = time.time_ns()

    def blob(self, oid: str, size: int = 0) -> bytes:
        return self.blobs.get_or_load(oid, lambda key: self.browser.blob(key, size))

    def tree(self, tree_id: str) -> list[TreeEntry]:
        return self.listings.get_or_load(tree_id, self.browser.tree)

    def is_stale(self, refreshed_at: float | None) -> bool:
        return refreshed_at is None or self.clock() - refreshed_at >= self.refresh_interval
