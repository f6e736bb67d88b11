"""File contents for the mount, read from the store with bounded memory.

Small blobs are kept whole in a byte-bounded LRU (the kernel usually reads one in
a single request). Those of a directory just listed are read ahead, in the order
the listing gives them (the order `tar`, `diff -r` and `grep -r` read them), by a
git process of their own. Then, while no other listing is waiting, the directories
below it are read ahead the same way, depth first (where those readers go next),
within a window of PREFETCH_BUDGET bytes: a walk of a tree never stalls at a
directory. When a directory's listing is sent (`listed`), its files in memory are
handed on from a thread of their own (`push_later`, `on_prefetched`: the mount puts
them in the kernel's page cache once it knows their inodes, so the reads that
follow never reach the daemon), and those still arriving are handed on as they
arrive. A blob of SPOOL_MIN or more
is never whole in memory: git
streams it into an unlinked temporary file (store.objects.catfile), and reads are served
from there with pread; the spooled files are bounded by total size on disk, and
an evicted one goes when its last reader is done with it (one blob bigger than the
whole budget is kept on its own until another such blob is read). So whatever is
opened, and however many files at once, the mount's memory stays within its caches.

Readers that share caches (another agent's snapshots beside the store, Context.
reading_from) share the hand-on too: a file is pushed the same way whichever object
database it was read from.
"""

from __future__ import annotations

import logging
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import BinaryIO

from rewindfs.errors import StoreError
from rewindfs.fs.cache import LruCache
from rewindfs.fs.walkahead import DIR_WEIGHT, FILE_WEIGHT, Below, Walk, Wanted
from rewindfs.store.history import ObjectReader

log = logging.getLogger(__name__)

MiB = 1024 * 1024
SPOOL_MIN = 1 * MiB
DEFAULT_MEMORY = 64 * MiB
DEFAULT_SPOOL = 1024 * MiB
PREFETCH_BUDGET = 16 * MiB  # read ahead per directory listed, and below it

PREFETCH_WAIT = 10.0  # seconds a reader waits for a blob being read ahead
# A push that names an inode the kernel has not made yet (the process that listed the
# directory has not woken up to link its entries) is tried again after these pauses.
PUSH_RETRY_DELAYS = (0.002, 0.01, 0.05)
# Pauses (seconds) before a listing's push is tried again, when it was sent before the
# lister took the entries in: it usually takes them a moment after the reply.
LINK_PAUSES = (0.0002, 0.001, 0.05)


class Spooled:
    """A blob inflated into an anonymous file (no name; gone when closed)."""

    def __init__(self, file: BinaryIO, size: int):
        self.file = file
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self.file.fileno(), max(0, min(length, self.size - offset)), offset)


class BlobReader:
    memory: LruCache[str, bytes]
    spools: LruCache[str, Spooled]

    def __init__(self, browser: ObjectReader, memory_bytes: int = DEFAULT_MEMORY,
                 spool_bytes: int = DEFAULT_SPOOL, spool_dir: Path | None = None,
                 shared_with: BlobReader | None = None):
        """`shared_with`: another reader whose caches this one uses too (a blob is named
        by its content, whichever object database it was read from)."""
        self.browser = browser
        self.spool_dir = spool_dir
        if shared_with is not None:
            self.memory, self.spools = shared_with.memory, shared_with.spools
            self._hand_on = shared_with._hand_on
        else:
            self.memory = LruCache(memory_bytes, len, largest=min(SPOOL_MIN, memory_bytes))
            self.spools = LruCache(spool_bytes, lambda s: max(1, s.size))
            self._hand_on: list[Callable[[int, bytes], bool] | None] = [None]
        self.prefetch_budget = min(PREFETCH_BUDGET, memory_bytes // 4)
        # oid being read ahead -> the Event a reader waits on (made only when one waits)
        self._pending: dict[str, threading.Event | None] = {}
        self._guard = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[list[str], int] | None] = queue.SimpleQueue()
        # The walk below the last directory listed: only the last one is followed, so a
        # reader listing faster than the read-ahead goes queues no walk (and no nodes).
        self._below_next: Below | None = None
        self._prefetcher: threading.Thread | None = None
        # a listing's pushes, or files read ahead that arrived after it
        self._pushes: queue.SimpleQueue[PushJob | list[tuple[int, bytes]] | None] = \
            queue.SimpleQueue()
        self._pusher: threading.Thread | None = None
        self._pipe = browser.new_pipe()  # its own git: never waits behind big reads
        self._oversized: tuple[str, Spooled] | None = None
        # oid read ahead -> inodes of listed files showing it, to push once it arrives
        self._wanted_by: dict[str, list[int]] = {}

    @property
    def on_prefetched(self) -> Callable[[int, bytes], bool] | None:
        """Given (inode, bytes) of each listed file read ahead, once the readers waiting
        for it are free; False when it could not take it (the kernel refused the inode)."""
        return self._hand_on[0]

    @on_prefetched.setter
    def on_prefetched(self, push: Callable[[int, bytes], bool] | None) -> None:
        self._hand_on[0] = push  # for every reader sharing these caches

    def whole(self, oid: str, size: int) -> bytes:
        """A small blob's bytes (symlink targets, small files)."""
        if oid in self._pending:  # being read ahead: wait for it rather than read it twice
            with self._guard:
                arriving = None
                if oid in self._pending:
                    arriving = self._pending[oid]
                    if arriving is None:
                        arriving = self._pending[oid] = threading.Event()
            if arriving is not None:
                arriving.wait(PREFETCH_WAIT)
        return self.memory.get_or_load(oid, lambda key: self.browser.blob(key, size))

    def prefetch(self, blobs: list[Wanted], directory: int = 0, below: Below | None = None
                 ) -> None:
        """Read these small blobs (oid, size, inode) ahead, in git's own process and in the
        order given, while the reader is still busy with the first (a directory was just
        listed: `tar`, `diff -r` and `grep -r` read its files next, in that order). Then
        the files `below` yields, a directory at a time, while the window is not full and
        nothing else is listed; a listing of a `directory` the walk went through (the
        reader following it) slides the window on instead of starting again. Within a
        budget, so a huge directory does not flush the cache; what is coming is skipped."""
        todo: list[str] = []
        total = 0
        with self._guard:
            for oid, size, _ in blobs:
                if size >= SPOOL_MIN:
                    continue
                total += size
                if total > self.prefetch_budget:
                    break
                if oid not in self._pending and oid not in self.memory:
                    self._pending[oid] = None
                    todo.append(oid)
            if (todo or below is not None) and self._prefetcher is None:
                self._prefetcher = threading.Thread(target=self._prefetch_loop, daemon=True,
                                                    name="rewindfs-prefetch")
                self._prefetcher.start()
        if todo or below is not None:
            if below is not None:
                with self._guard:
                    self._below_next = below
            self._queue.put((todo, directory))

    def listed(self, blobs: list[Wanted]) -> list[tuple[int, bytes]]:
        """These files (oid, size, inode) are being shown (their directory's listing is
        on its way to the kernel): (inode, bytes) of those in memory, for the caller to
        push (`push_later`); those still being read ahead are handed to `on_prefetched`
        as they arrive. Nothing without `on_prefetched`."""
        if self.on_prefetched is None:
            return []
        ready: list[tuple[int, str]] = []
        with self._guard:
            for oid, size, inode in blobs:
                if size >= SPOOL_MIN:
                    continue
                if oid in self._pending:  # released after it is in memory: pushed then
                    self._wanted_by.setdefault(oid, []).append(inode)
                else:
                    ready.append((inode, oid))
        found = ((inode, self.memory.get(oid)) for inode, oid in ready)
        return [(inode, data) for inode, data in found if data is not None]

    def push_later(self, files: PushJob | list[tuple[int, bytes]]) -> None:
        """Hand (inode, bytes) to `on_prefetched` from a thread of its own (a push waits
        for any read of the same file the kernel has in flight, so it must never run on
        the thread that answers reads); those the kernel refuses are tried again once
        their inodes are known (a listing's, `PushJob.linked`), or after a few short
        pauses."""
        with self._guard:
            if self._pusher is None:
                self._pusher = threading.Thread(target=self._push_loop, daemon=True,
                                                name="rewindfs-push")
                self._pusher.start()
        self._pushes.put(files)

    def close(self) -> None:
        """Stop reading ahead and let go of the git process."""
        with self._guard:
            thread, self._prefetcher = self._prefetcher, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
        # Only now: a blob the read-ahead was bringing hands its push to the pusher, which
        # would start a second one if this one were let go of first (and the one stop
        # could then end either, leaving this join waiting for ever).
        with self._guard:
            pusher, self._pusher = self._pusher, None
        if pusher is not None:
            self._pushes.put(None)
            pusher.join()
        self._pipe.close()

    def _push_loop(self) -> None:
        while (item := self._pushes.get()) is not None:
            job = item if isinstance(item, PushJob) else None
            push = self.on_prefetched
            missed: list[tuple[int, bytes]] = []
            patient = job is not None and not job.linked.is_set()
            for inode, data in (item.files if job is not None else item) if push else ():
                if push(inode, data):
                    continue
                if patient and _once_known(job, partial(push, inode, data)):
                    continue
                patient = False
                missed.append((inode, data))
            if job is not None:
                job.finish()
            for delay in PUSH_RETRY_DELAYS:  # the kernel still does not know them
                if not missed or push is None:
                    break
                time.sleep(delay)
                missed = [(inode, data) for inode, data in missed if not push(inode, data)]

    def _prefetch_loop(self) -> None:
        walk = Walk(None)
        while True:
            if walk.paused(self.prefetch_budget) or not self._queue.empty():
                job = self._queue.get()
                if job is None:
                    return
                todo, directory = job
                self._fetch(todo)
                if directory in walk.seen:
                    walk.caught_up(directory)  # the reader is this far: the window slides
                    continue
                with self._guard:
                    below, self._below_next = self._below_next, None
                if below is not None:
                    walk = Walk(below)  # the reader went elsewhere: follow it
                continue
            self._walk_step(walk)

    def _fetch(self, todo: list[str]) -> None:
        if not todo:
            return
        try:
            self._pipe.read_many(todo, self._arrived)
        except (OSError, StoreError) as exc:  # readers then read for themselves
            log.debug("prefetch failed: %s", exc)
        finally:
            for oid in todo:
                self._release(oid)

    def _walk_step(self, walk: Walk) -> None:
        """Fetch the files of the walk's next directory (cached ones count towards the
        window too, so it stays ahead of the reader and never runs away from it)."""
        assert walk.below is not None
        try:
            directory, files = next(walk.below)
        except StopIteration:
            walk.below = None
            return
        except Exception as exc:  # noqa: BLE001 - a guess ahead: whoever reads it meets it
            log.debug("read-ahead below a directory stopped: %s", exc)
            walk.below = None
            return
        walk.total += DIR_WEIGHT
        todo: list[str] = []
        with self._guard:
            for oid, size, _ in files:
                if size >= SPOOL_MIN:
                    continue
                walk.total += max(size, FILE_WEIGHT)
                if walk.total - walk.reader > self.prefetch_budget:
                    break  # the rest is fetched when the directory is listed
                if oid not in self._pending and oid not in self.memory:
                    # Not shown yet (its inode is unknown to the kernel): no push; the
                    # listing that shows it hands it over from memory.
                    self._pending[oid] = None
                    todo.append(oid)
        walk.seen[directory] = walk.total
        self._fetch(todo)

    def _arrived(self, oid: str, data: bytes | None) -> None:
        if data is not None:
            self.memory.put(oid, data)
        inodes, waited = self._release(oid)
        # A read that waited for the blob fills the file's pages with its answer (and the
        # kernel holds them until then: a push would wait for it). The others are pushed
        # from the pusher's thread, so reading ahead never waits for the kernel.
        if data is not None and inodes and not waited:
            self.push_later([(inode, data) for inode in inodes])

    def _release(self, oid: str) -> tuple[list[int], bool]:
        """Inodes wanting the blob, and whether a reader waited for it."""
        with self._guard:
            event = self._pending.pop(oid, None)
            inodes = self._wanted_by.pop(oid, [])
        if event is not None:
            event.set()
        return inodes, event is not None

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


class PushJob:
    """Files of one listing on their way to the kernel's page cache (BlobReader.push_later).

    `linked` is set once the lister has taken in every entry (its listing reached its
    end), so the kernel knows their inodes: a push refused before that is tried again
    then. `when_done` lets the end of the listing wait for the pushes, so that the
    reader's reads that follow find the pages there."""

    def __init__(self, files: list[tuple[int, bytes]]):
        self.files = files
        self.linked = threading.Event()
        self._lock = threading.Lock()
        self._done = False
        self._then: Callable[[], object] | None = None

    def when_done(self, then: Callable[[], object]) -> bool:
        """True when every push was made already; else `then()` is called (from the
        pusher's thread) once they are."""
        with self._lock:
            if not self._done:
                self._then = then
            return self._done

    def finish(self) -> None:
        with self._lock:
            self._done = True
            then, self._then = self._then, None
        if then is not None:
            then()


def _once_known(job: PushJob, push: Callable[[], bool]) -> bool:
    """push() again until it is taken: the listing's reply was sent before the lister
    took its entries in (the kernel makes their inodes then), which takes a moment, and
    is done at the latest when the listing reaches its end (`job.linked`)."""
    for pause in LINK_PAUSES:
        known = job.linked.wait(pause)
        if push():
            return True
        if known:
            return False
    return False
