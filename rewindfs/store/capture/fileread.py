"""Reading one working-tree path as a git blob: what is on disk, or a truthful refusal.

Plain read() on a descriptor opened with O_NOFOLLOW, never mmap (a file truncated by
another process while mapped raises SIGBUS and kills the process). The path's lstat
(taken by the walk) is compared with an fstat of the descriptor after the read: when
size, mtime, ctime or inode moved, or the bytes read do not match the size, the file
changed while it was read and the read is tried again; a file that keeps changing is
reported as such, never stored half written. A file that is stable while read is
stored as it is, whatever else in the tree is changing.

One tick of the kernel's coarse clock can hide a write: a file written in the same
tick as its previous write keeps its mtime and, rewritten at the same size, looks
unchanged. A file modified within `RACY_NS` of the moment it was read is therefore
flagged `racy`; the capture records it with a size git never matches, so the next
checkpoint hashes it again (git's own "racily clean" rule, applied at read time).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from dataclasses import dataclass

READ_ATTEMPTS = 3
RACY_NS = 50_000_000  # generous: coarse clock ticks are 1-10 ms
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

# What became of a path when it was read.
BLOB, LINK, GONE, CHANGING, UNREADABLE, OVERSIZE, DIRECTORY, SPECIAL = range(8)


@dataclass(slots=True)
class Read:
    outcome: int
    st: os.stat_result | None = None  # stat of what was read (BLOB, LINK)
    data: bytes = b""
    racy: bool = False

    @property
    def mode(self) -> int:
        """The git file mode of what was read."""
        if self.outcome == LINK:
            return 0o120000
        return 0o100755 if self.st is not None and self.st.st_mode & 0o100 else 0o100644

    def index_fields(self) -> IndexFields:
        """What an index entry records of what was read (BLOB, LINK), as libgit2's
        add_bypath fills it: times as 32-bit seconds and nanoseconds, `dev` = st_rdev."""
        st = self.st
        assert st is not None
        # A size git never matches makes the next walk hash a racily written file again.
        size = 0 if self.racy and st.st_size else st.st_size & 0xFFFFFFFF
        return (int32(st.st_ctime_ns // 1_000_000_000), st.st_ctime_ns % 1_000_000_000,
                int32(st.st_mtime_ns // 1_000_000_000), st.st_mtime_ns % 1_000_000_000,
                st.st_rdev & 0xFFFFFFFF, st.st_ino & 0xFFFFFFFF, self.mode,
                st.st_uid & 0xFFFFFFFF, st.st_gid & 0xFFFFFFFF, size)


# (ctime s, ctime ns, mtime s, mtime ns, dev, ino, mode, uid, gid, size): plain ints, so
# cheap to hand from process to process.
IndexFields = tuple[int, int, int, int, int, int, int, int, int, int]


def int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def blob_id(data: bytes) -> bytes:
    """The raw 20-byte git object id of a blob holding `data`."""
    h = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    h.update(data)
    return h.digest()


def read_path(path: bytes, max_size: int, st: os.stat_result | None = None) -> Read:
    """Read `path` (absolute, bytes) as it is on disk. `max_size` 0 = no cap.

    `st`, the path's lstat taken moments ago (by the walk), saves taking it again; a
    change since then shows like a change during the read, and is read again.
    """
    for _ in range(READ_ATTEMPTS):
        if st is None:
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                return Read(GONE)
            except OSError:
                return Read(UNREADABLE)
        if stat.S_ISREG(st.st_mode):
            if max_size and st.st_size > max_size:
                return Read(OVERSIZE)
            result = _read_file(path, st)
        elif stat.S_ISLNK(st.st_mode):
            result = _read_link(path, st)
        elif stat.S_ISDIR(st.st_mode):
            return Read(DIRECTORY)
        else:
            return Read(SPECIAL)
        if result is not None:
            return result
        st = None
    return Read(CHANGING)


def _read_file(path: bytes, before: os.stat_result) -> Read | None:
    """The file's bytes if it still is what `before` describes and stayed so while
    being read; None when it changed (or changed type)."""
    started = time.time_ns()
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return Read(GONE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link replaced the file since lstat
            return None
        return Read(UNREADABLE)
    try:
        data = _read_all(fd, before.st_size)
        after = os.fstat(fd)
    except IsADirectoryError:
        return None  # a directory replaced the file since lstat
    except OSError:
        return Read(UNREADABLE)
    finally:
        os.close(fd)
    if (len(data) != before.st_size or after.st_size != before.st_size
            or after.st_mtime_ns != before.st_mtime_ns
            or after.st_ctime_ns != before.st_ctime_ns
            or after.st_ino != before.st_ino or not stat.S_ISREG(after.st_mode)):
        return None
    racy = max(after.st_mtime_ns, after.st_ctime_ns) >= started - RACY_NS
    return Read(BLOB, after, data, racy)


def _read_all(fd: int, size: int) -> bytes:
    """Everything up to EOF, asking for one byte more than `size` so growth shows."""
    first = os.read(fd, size + 1)
    if len(first) >= size:
        return first
    # Short: the file shrank, or one read() stopped at 2 GiB. Read on to EOF.
    parts = [first]
    while chunk := os.read(fd, 1 << 24):
        parts.append(chunk)
    return b"".join(parts)


def _read_link(path: bytes, before: os.stat_result) -> Read | None:
    try:
        target = os.readlink(path)
        after = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return Read(GONE)
    except OSError:
        return None  # replaced by a non-link since lstat
    if after.st_ino != before.st_ino or after.st_ctime_ns != before.st_ctime_ns:
        return None
    return Read(LINK, after, target)
