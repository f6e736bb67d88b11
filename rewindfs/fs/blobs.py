"""File contents for the mount, read from the store with bounded memory.

Small blobs are kept whole in a byte-bounded LRU (the kernel usually reads one in
a single request). Those of a directory just listed are read ahead, in the order
the listing gives them (the order `tar`, `diff -r` and `grep -r` read them), by a
git process of their own; each is handed on as it arrives (`on_prefetched`: the
mount puts it in the kernel's page cache, so the read that follows never reaches
the daemon). A blob of SPOOL_MIN or more is never whole in memory: git
streams it into an unlinked temporary file (store.objects.catfile), and reads are served
from there with pread; the spooled files are bounded by total size on disk, and
an evicted one goes when its last reader is done with it (one blob bigger than the
whole budget is kept on its own until another such blob is read). So whatever is
opened, and however many files at once, the mount's memory stays within its caches.
"""

from __future__ import annotations

import logging
import os
import queue
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from rewindfs.errors import StoreError
from rewindfs.fs.cache import LruCache
from rewindfs.store.history import StoreBrowser
from rewindfs.store.objects import BlobPipe

log = logging.getLogger(__name__)

MiB = 1024 * 1024
SPOOL_MIN = 1 * MiB
DEFAULT_MEMORY = 64 * MiB
DEFAULT_SPOOL = 1024 * MiB
PREFETCH_BUDGET = 16 * MiB  # read ahead per directory listed
PREFETCH_WAIT = 10.0  # seconds a reader waits for a blob being read ahead


class Spooled:
    """A blob inflated into an anonymous file (no name; gone when closed)."""

    def __init__(self, file: BinaryIO, size: int):
        self.file = file
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self.file.fileno(), max(0, min(length, self.size - offset)), offset)


class BlobReader:
    def __init__(self, browser: StoreBrowser, memory_bytes: int = DEFAULT_MEMORY,
                 spool_bytes: int = DEFAULT_SPOOL, spool_dir: Path | None = None):
        self.browser = browser
        self.spool_dir = spool_dir
        self.memory: LruCache[str, bytes] = LruCache(memory_bytes, len,
                                                     largest=min(SPOOL_MIN, memory_bytes))
        self.spools: LruCache[str, Spooled] = LruCache(spool_bytes, lambda s: max(1, s.size))
        self.prefetch_budget = min(PREFETCH_BUDGET, memory_bytes // 4)
        self._pending: dict[str, threading.Event] = {}
        self._guard = threading.Lock()
        self._queue: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._prefetcher: threading.Thread | None = None
        self._pipe = BlobPipe(browser.layout)  # its own git: never waits behind big reads
        self._oversized: tuple[str, Spooled] | None = None
        self._wanted_by: dict[str, list[int]] = {}  # oid read ahead -> inodes showing it
        # (inode, bytes) of each blob read ahead, once the readers waiting for it are free
        self.on_prefetched: Callable[[int, bytes], object] | None = None

    def whole(self, oid: str, size: int) -> bytes:
        """A small blob's bytes (symlink targets, small files)."""
        arriving = self._pending.get(oid)
        if arriving is not None:  # being read ahead: wait for it rather than read it twice
            arriving.wait(PREFETCH_WAIT)
        return self.memory.get_or_load(oid, lambda key: self.browser.blob(key, size))

    def prefetch(self, blobs: list[tuple[str, int, int]]) -> None:
        """Read these small blobs (oid, size, inode) ahead, in git's own process and in the
        order given, while the reader is still busy with the first (a directory was just
        listed: `tar`, `diff -r` and `grep -r` read its files next, in that order).
        Within a budget, so a huge directory does not flush the cache; what is cached or
        already coming is skipped."""
        todo: list[str] = []
        total = 0
        with self._guard:
            for oid, size, inode in blobs:
                if size >= SPOOL_MIN or oid in self.memory:
                    continue
                if oid in self._pending:
                    if oid in self._wanted_by:
                        self._wanted_by[oid].append(inode)
                    continue
                total += size
                if total > self.prefetch_budget:
                    break
                self._pending[oid] = threading.Event()
                self._wanted_by[oid] = [inode]
                todo.append(oid)
            if todo and self._prefetcher is None:
                self._prefetcher = threading.Thread(target=self._prefetch_loop, daemon=True,
                                                    name="rewindfs-prefetch")
                self._prefetcher.start()
        if todo:
            self._queue.put(todo)

    def close(self) -> None:
        """Stop reading ahead and let go of the git process."""
        with self._guard:
            thread, self._prefetcher = self._prefetcher, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
        self._pipe.close()

    def _prefetch_loop(self) -> None:
        while (todo := self._queue.get()) is not None:
            try:
                self._pipe.read_many(todo, self._arrived)
            except (OSError, StoreError) as exc:  # readers then read for themselves
                log.debug("prefetch failed: %s", exc)
            finally:
                for oid in todo:
                    self._release(oid)

    def _arrived(self, oid: str, data: bytes | None) -> None:
        if data is not None:
            self.memory.put(oid, data)
        inodes = self._release(oid)
        # Only now: a read of this very file may be waiting for the blob, and the kernel
        # holds that file's page until the read is answered, which a push would wait for.
        if data is not None and self.on_prefetched is not None:
            for inode in inodes:
                self.on_prefetched(inode, data)

    def _release(self, oid: str) -> list[int]:
        with self._guard:
            event = self._pending.pop(oid, None)
            inodes = self._wanted_by.pop(oid, [])
        if event is not None:
            event.set()
        return inodes

    def read(self, oid: str, size: int, offset: int, length: int) -> bytes:
        if size < SPOOL_MIN:
            return self.whole(oid, size)[offset:offset + length]
        if size > self.spools.largest:  # too big for the spool budget: keep just the last one
            with self._guard:
                last = self._oversized
            if last is None or last[0] != oid:
                last = (oid, self._spool(oid))
                with self._guard:
                    self._oversized = last
            return last[1].read(offset, length)
        return self.spools.get_or_load(oid, self._spool).read(offset, length)

    def cached(self, oid: str) -> bool:
        return oid in self.memory or oid in self.spools

    def _spool(self, oid: str) -> Spooled:
        file = self._tempfile()
        try:
            size = self.browser.copy_blob(oid, file.write)
            file.flush()
        except BaseException:
            file.close()
            raise
        return Spooled(file, size)

    def _tempfile(self) -> BinaryIO:
        # Next to the store (its disk, not a RAM-backed /tmp), mode 0600 and unlinked.
        if self.spool_dir is not None:
            try:
                return tempfile.TemporaryFile(dir=self.spool_dir)
            except OSError:
                pass
        return tempfile.TemporaryFile()
