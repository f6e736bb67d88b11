"""Files and directories rewindfs owns: private whatever the umask, never reached through a
symlink planted in their place.

Directories are created 0700 and files 0600 (a umask can only take bits away from
those). Files are opened with O_NOFOLLOW and must be regular files, so a symlink
(or a FIFO) left at a log's or a journal's name by another user makes rewindfs
refuse to write, instead of creating or appending to whatever it points at.
Directories that already exist keep their mode: they may be the user's own
(`HERMES_HOME`), and the store's contents are guarded by the store directory,
which is 0700.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rewindfs.store.objects.durable import fsync_dir, write_all

DIR_MODE = 0o700
FILE_MODE = 0o600
_FILE_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # O_NONBLOCK: a FIFO never blocks


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a directory, creating it and any missing parents 0700."""
    path = Path(path)
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            pass  # made meanwhile by another process
    if not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(path))
    return path


def open_file(path: str | os.PathLike[str], flags: int) -> int:
    """A descriptor of the regular file at `path` (created 0600 when O_CREAT is in `flags`);
    OSError (ELOOP, or EINVAL for a non-regular file) instead of following a planted link."""
    if flags & os.O_CREAT:
        ensure_dir(Path(path).parent)
    fd = os.open(path, flags | _FILE_FLAGS, FILE_MODE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: str | os.PathLike[str]) -> int:
    """A descriptor appending to the private file at `path` (created 0600 if missing)."""
    return open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Create or overwrite the private file at `path` with `data` (not atomic: for files
    in a directory nobody else looks into yet)."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def append_text(path: str | os.PathLike[str], text: str) -> None:
    """Append `text` (UTF-8) to the private file at `path`."""
    fd = open_append(path)
    try:
        write_all(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def append_record(path: str | os.PathLike[str], data: bytes, *, sync: bool = True) -> None:
    """Append one newline-terminated record to the private file at `path`; a record a
    kill cut short before it is closed with a newline first, never glued onto. With
    `sync`, the record (and the file's name, when this created it) is on disk when this
    returns."""
    fd = open_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    if sync and not size:  # (most likely) created just now: its name must last too
        fsync_dir(Path(path).parent)


def write_atomic(path: str | os.PathLike[str], text: str, *, errors: str = "strict") -> None:
    """Replace `path` with `text` (UTF-8), mode 0600, so readers see the old or the new file,
    after a kill or a power cut alike: the file is fsynced before it is renamed into
    place, and its directory after.

    The temporary name is unique per process and thread, so concurrent writers of the
    same file never write into each other's temporary file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        try:
            fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            os.unlink(tmp)  # ours, left by a killed run of this very process id and thread
            fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            write_all(fd, text.encode("utf-8", errors=errors))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def place_marker(path: str | os.PathLike[str]) -> bool:
    """An empty 0600 file at `path`, in a real directory (created 0700 if missing). A
    symlink (or FIFO) planted at that name is removed, never followed; a parent that
    is a symlink makes it give up (False)."""
    path = Path(path)
    try:
        os.mkdir(path.parent, DIR_MODE)
    except FileExistsError:
        pass
    with _real_dir(path.parent) as dir_fd:
        if dir_fd is None:
            return False
        for _ in range(2):
            try:
                fd = os.open(path.name, os.O_WRONLY | os.O_CREAT | _FILE_FLAGS, FILE_MODE,
                             dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENXIO):
                    raise
                os.unlink(path.name, dir_fd=dir_fd)  # a planted link or FIFO: not ours
                continue
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
            os.close(fd)
            if regular:
                return True
            os.unlink(path.name, dir_fd=dir_fd)
    return False


def remove_marker(path: str | os.PathLike[str]) -> bool:
    """Remove `path` if its parent is a real directory (never through a symlinked parent)."""
    path = Path(path)
    with _real_dir(path.parent) as dir_fd:
        if dir_fd is None:
            return False
        try:
            os.unlink(path.name, dir_fd=dir_fd)
        except FileNotFoundError:
            return False
    return True


@contextmanager
def _real_dir(path: Path) -> Iterator[int | None]:
    """A descriptor of `path` when it is a real directory (not a symlink), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)
