"""Storing a large capture on two cores: a forked child reads, hashes and deflates its
share of the files into a pack of its own while the capturing process does the rest.

Threads do not help here: the per-file work is mostly Python, and a second thread
fighting for the GIL made a 200,000-file capture slower, not faster. A child process
has its own interpreter. It is forked (not spawned) so it starts at once with
everything it needs, and it touches only plain Python, hashlib and ISA-L — never
libgit2, whose state is the parent's — and never collects garbage, which is the
parent's too (its finalizers would run twice).

What the child hands back, through a pipe, is what the parent would have known had it
read the files itself: each file's outcome, blob id and index entry fields, plus its
pack, sealed under a temp name. The parent publishes that pack together with
its own, before any index entry names their objects, so the crash guarantees of the
capture are unchanged. The parent never trusts the child: a child that fails, dies or
says something incomplete is ignored and the parent reads its share itself. Its
progress (files, bytes) is shared through a few bytes of shared memory.

Ctrl-C goes to the whole process group; the child ignores it, and the parent, which
notices it, kills the child first (it never waits for the child's share) and removes
its temp files. A child that makes no progress for the stall limit (a read from a
hung network filesystem, a fork that inherited a lock held by another thread of a
threaded host) is killed the same way, and the parent reads its share itself. The
child also dies with the parent (PR_SET_PDEATHSIG), so a killed capture leaves no
process behind.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable
from pathlib import Path

from rewindfs.lazylog import logger
from rewindfs.store.capture import fileread, interrupts
from rewindfs.store.objects import liveness
from rewindfs.store.objects.durable import write_all
from rewindfs.store.objects.packwrite import BLOB, PackWriter, deflate, publish_sealed

MIN_FILES = 1_000  # below both, a second process costs more than it saves
MIN_BYTES = 16 << 20
FILE_OVERHEAD = 16 << 10  # per-file cost (open, stat, read, Python) in bytes' worth
_PROGRESS = struct.Struct("=QQ")  # files done, bytes done
_PR_SET_PDEATHSIG = 1
log = logger(__name__)

Item = tuple[bytes, os.stat_result]  # (path relative to the root, the walk's lstat)
# (path, fileread outcome, blob id, index entry fields): plain data, cheap to pickle
Result = tuple[bytes, int, bytes | None, fileread.IndexFields | None]


def worth_it(items: list[Item], total_bytes: int) -> bool:
    return (len(items) >= MIN_FILES or total_bytes >= MIN_BYTES) and _cores() >= 2


def split(items: list[Item]) -> tuple[list[Item], list[Item]]:
    """Two contiguous halves of equal estimated work (files next to each other stay
    together, which keeps reads local); the first is the parent's."""
    weights = [st.st_size + FILE_OVERHEAD for _rel, st in items]
    half, running = sum(weights) / 2, 0
    for i, weight in enumerate(weights):
        running += weight
        if running >= half:
            return items[: i + 1], items[i + 1:]
    return items, []


class Helper:
    """One forked child storing `items`; see the module docstring."""

    def __init__(self, pid: int, pipe: int, shared: mmap.mmap, items: list[Item],
                 pack_dir: Path):
        self.pid = pid
        self.items = items
        self._pipe: int | None = pipe
        self._reaped = False
        self._shared = shared
        self._pack_dir = pack_dir
        self._sealed: tuple[str, Path, Path] | None = None
        self._oids: set[bytes] = set()
        self._status: int | None = None  # the child's wait status, once reaped
        self.gave_up: str | None = None  # why the child's share was not used, if it was not

    @classmethod
    def start(cls, objects_dir: Path, root: bytes, items: list[Item], cap: int
              ) -> Helper | None:
        """Fork the child; None when the system will not (the caller stores `items`)."""
        (objects_dir / "pack").mkdir(parents=True, exist_ok=True)
        shared = mmap.mmap(-1, _PROGRESS.size)
        parent = os.getpid()
        read_end, write_end = os.pipe()
        collecting = gc.isenabled()
        gc.disable()  # the child never collects, from its first instruction (see _child)
        try:
            pid = os.fork()
        except OSError as exc:
            pid, failed = -1, exc
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(write_end, shared, parent, objects_dir, root, items, cap)
        if collecting:
            gc.enable()
        if pid < 0:
            os.close(read_end)
            os.close(write_end)
            log.info("no child for the split capture: %s", failed)
            return None
        os.close(write_end)
        return cls(pid, read_end, shared, items, objects_dir / "pack")

    def progress(self) -> tuple[int, int]:
        """(files, bytes) the child has stored so far."""
        return _PROGRESS.unpack_from(self._shared, 0)

    def results(self, check: Callable[[], None], stall: float | None = None
                ) -> list[Result] | None:
        """Wait for the child, calling `check` (which may raise, e.g. on Ctrl-C) every
        tenth of a second; what it read, or None when it failed or made no progress
        for `stall` seconds (default: the stall limit; 0: no limit). Nothing of a failed
        child is used: it is killed first, its temp files removed."""
        assert self._pipe is not None
        stall = liveness.stall_seconds() if stall is None else stall
        chunks = []
        seen, moved = self.progress(), time.monotonic()
        try:
            while True:
                check()
                if select.select([self._pipe], [], [], 0.1)[0]:
                    chunk = os.read(self._pipe, 1 << 20)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    moved = time.monotonic()
                now = self.progress()
                if now != seen:
                    seen, moved = now, time.monotonic()
                    interrupts.check()  # the child's work is this capture's progress
                elif stall and time.monotonic() - moved > stall:
                    self.abort()  # hung: its share is read by the parent instead
                    return self._give_up(f"no progress for {stall:g} s")
        except BaseException:
            self.abort()  # first: never wait for a child's whole share on Ctrl-C
            raise
        self._close()
        self._reap()  # it sent everything and closed its end: it is exiting
        try:
            done, results, sealed = pickle.loads(b"".join(chunks))
        except Exception:  # cut short or garbled: the child died midway
            self._remove_temp_files()
            return self._give_up(f"it ended ({self._ended()}) without its whole answer")
        if done is not True:  # it failed, and says why
            self._remove_temp_files()
            return self._give_up(f"it failed: {results}")
        if len(results) != len(self.items):
            self._remove_temp_files()
            return self._give_up(f"it answered for {len(results)} of {len(self.items)} files")
        self._sealed = sealed
        self._oids = {oid for _rel, _outcome, oid, _fields in results if oid is not None}
        return results

    def _give_up(self, why: str) -> None:
        self.gave_up = why
        log.info("the split capture's child (pid %d) was given up, its %d files are "
                 "stored by the parent: %s", self.pid, len(self.items), why)
        return None

    def _ended(self) -> str:
        status = self._status
        if status is None:
            return "reaped elsewhere"
        if os.WIFSIGNALED(status):
            return f"killed by signal {os.WTERMSIG(status)}"
        return f"exit status {os.waitstatus_to_exitcode(status)}"

    def sealed_bytes(self) -> int:
        """Bytes of the child's pack (after `results`), not yet visible."""
        if self._sealed is None:
            return 0
        try:
            return os.stat(self._sealed[1]).st_size
        except OSError:
            return 0

    def publish(self) -> set[bytes]:
        """Make the child's pack visible (after `results`); the ids it holds."""
        if self._sealed is not None:
            name, tmp_pack, tmp_idx = self._sealed
            publish_sealed(self._pack_dir, name, tmp_pack, tmp_idx)
            self._sealed = None
        return self._oids

    def abort(self) -> None:
        """Stop the child and remove whatever it wrote (nothing refers to it)."""
        if not self._reaped:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._close()
        self._reap()
        self._remove_temp_files()

    def _close(self) -> None:
        pipe, self._pipe = self._pipe, None  # forgotten first: abort() closes only once
        if pipe is not None:
            os.close(pipe)

    def _reap(self) -> None:
        if self._reaped:
            return
        self._reaped = True
        try:
            self._status = os.waitpid(self.pid, 0)[1]
        except ChildProcessError:  # reaped already (the caller's SIGCHLD handler, say)
            pass

    def _remove_temp_files(self) -> None:
        for tmp in self._pack_dir.glob(f"tmp_*_rewind_{self.pid}_*"):
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


def _child(pipe: int, shared: mmap.mmap, parent: int, objects_dir: Path, root: bytes,
           items: list[Item], cap: int) -> None:
    """Store `items` and send what the parent needs; runs with the garbage collector off
    (Helper.start): the parent's garbage not yet collected (its temp directories, open
    files with buffered writes, libgit2 objects) would otherwise be finalized a second
    time here, removing the parent's directories, writing its buffers twice, freeing
    libgit2 state. What the child allocates is freed when it exits."""
    status = 1
    pack = None
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _die_with_parent(parent)
        pack = PackWriter(objects_dir)
        results: list[Result] = []
        stored = 0
        for i, (rel, st) in enumerate(items):
            read = fileread.read_path(root + b"/" + rel, cap, st)
            oid = fields = None
            if read.outcome == fileread.BLOB or read.outcome == fileread.LINK:
                oid = fileread.blob_id(read.data)
                if oid not in pack:
                    pack.add(oid, BLOB, len(read.data), deflate(read.data))
                stored += len(read.data)
                fields = read.index_fields()
            results.append((rel, read.outcome, oid, fields))
            _PROGRESS.pack_into(shared, 0, i + 1, stored)
        name = pack.seal()
        sealed = (name, *pack.sealed_files()) if name is not None else None
        payload = pickle.dumps((True, results, sealed), protocol=pickle.HIGHEST_PROTOCOL)
        write_all(pipe, payload)
        status = 0
    except Exception as exc:  # said to the parent, which stores the share itself
        if pack is not None:
            pack.abort()   # a full disk: the space is handed back at once
        try:
            write_all(pipe, pickle.dumps((False, f"{type(exc).__name__}: {exc}", None)))
        except Exception:  # noqa: BLE001 - the parent sees a cut-short answer instead
            pass
    finally:
        os._exit(status)  # never run the parent's cleanup code (atexit, libgit2 frees)


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: a killed parent's child finishes its share and exits
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
