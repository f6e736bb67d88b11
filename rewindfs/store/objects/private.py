"""Files and directories rewindfs owns: private whatever the umask, never reached through a
symlink planted in their place.

Directories are created 0700 and files 0600 (a umask can only take bits away from
those). Every file and directory is reached through directory descriptors opened
with O_NOFOLLOW below its *root* (the Hermes home, a checkpoint base: places a person
chose, which may well be symlinks themselves): a symlink planted at `logs`, at a
store directory or at a journal's name makes rewindfs refuse to write, instead of
creating or appending to whatever it points at. Files must be regular files (a FIFO
left at a log's name is refused too). Directories that already exist keep their
mode: they may be the user's own (`HERMES_HOME`), and the store's contents are
guarded by the store directory, which is 0700.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rewindfs.store.objects.durable import write_all

DIR_MODE = 0o700
FILE_MODE = 0o600
_FILE_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # O_NONBLOCK: a FIFO never blocks
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

_roots: set[str] = set()


def trust(*roots: str | os.PathLike[str]) -> None:
    """Directories a person chose (a checkpoint base, the Hermes home above it): they may
    be symlinks; below them nothing rewindfs reaches may be (store.objects.layout)."""
    _roots.update(os.path.abspath(os.path.expanduser(os.fspath(r))) for r in roots)


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a real directory, creating it and any missing parents 0700 (see `open_dir`)."""
    os.close(open_dir(path))
    return Path(path)


def open_dir(path: str | os.PathLike[str], *, create: bool = True) -> int:
    """A descriptor of the directory `path`, every component below its root opened
    without following a link (NotADirectoryError when one is in the way), created 0700
    when missing (unless not `create`: FileNotFoundError)."""
    path = os.path.abspath(os.fspath(path))
    # Outside every root (an agent's own config directory, say: often a dotfiles link)
    # the path is the person's to place, followed as given.
    start = _root_of(path) or path
    if not os.path.isdir(start):
        if not create:
            raise FileNotFoundError(errno.ENOENT, "no such directory", start)
        _make_parents(start)
    fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the person's choice
    try:
        for part in _below(start, path):
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile by another process
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise NotADirectoryError(exc.errno, "a symlink or a file is in the way",
                                             path) from None
                raise
            # Forgotten before it is closed: a Ctrl-C raised as the close returns must not
            # make the handler below close the number again (EBADF, or by then another
            # thread's file).
            fd, outer = inner, fd
            os.close(outer)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: str | os.PathLike[str], flags: int) -> int:
    """A descriptor of the regular file at `path` (created 0600 when O_CREAT is in `flags`);
    OSError (ELOOP, ENOTDIR, or EINVAL for a non-regular file) instead of following a
    planted link, at its name or at any directory above it (`open_dir`)."""
    path = Path(path)
    dir_fd = open_dir(path.parent, create=bool(flags & os.O_CREAT))
    try:
        return _open_in(dir_fd, path.name, flags, path)
    finally:
        os.close(dir_fd)


def _open_in(dir_fd: int, name: str, flags: int, shown: str | os.PathLike[str]) -> int:
    """Open `name` in `dir_fd` as a private regular file; errors name `shown`."""
    try:
        fd = os.open(name, flags | _FILE_FLAGS, FILE_MODE, dir_fd=dir_fd)
    except OSError as exc:
        why = "a symlink is there (never followed)" if exc.errno == errno.ELOOP \
            else exc.strerror
        raise OSError(exc.errno, why, os.fspath(shown)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(shown))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _root_of(path: str) -> str | None:
    """The longest root `path` is in (or is), if any."""
    home = os.path.abspath(os.path.expanduser(
        os.environ.get("HERMES_HOME") or os.path.join("~", ".hermes")))
    found = None
    for root in (*_roots, home):
        if (path == root or path.startswith(root.rstrip("/") + "/")) and \
                (found is None or len(root) > len(found)):
            found = root
    return found


def _below(start: str, path: str) -> list[str]:
    rel = os.path.relpath(path, start)
    return [] if rel == "." else rel.split(os.sep)


def _make_parents(path: str) -> None:
    """A root (or a directory outside every root) that does not exist yet: made 0700 with
    its missing parents, as a person's `mkdir -p` would (it is theirs to place)."""
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != os.path.dirname(probe):
        missing.append(probe)
        probe = os.path.dirname(probe)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            pass
    if not os.path.isdir(path):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)


def open_append(path: str | os.PathLike[str]) -> int:
    """A descriptor appending to the private file at `path` (created 0600 if missing)."""
    return open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, sync: bool = False) -> None:
    """Create or overwrite the private file at `path` with `data` (not atomic: for files
    in a directory nobody else looks into yet); with `sync`, on disk when it returns."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
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
    path = Path(path)
    dir_fd = open_dir(path.parent)
    try:
        fd = _open_in(dir_fd, path.name, os.O_RDWR | os.O_APPEND | os.O_CREAT, path)
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
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_atomic(path: str | os.PathLike[str], text: str, *, errors: str = "strict",
                 durable: bool = True) -> None:
    """Replace `path` with `text` (UTF-8): write_bytes_atomic."""
    write_bytes_atomic(path, text.encode("utf-8", errors=errors), durable=durable)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *,
                       durable: bool = True) -> None:
    """Replace `path` with `data`, mode 0600, so readers see the old or the new file,
    after a kill or a power cut alike: the file is fsynced before it is renamed into
    place, and its directory after; all of it through one descriptor of the directory.
    Not `durable` (a record only informative, written often; a cache read again from the
    objects): no fsyncs, so a power cut may leave the old file or an empty one (readers
    must take either), and a command that only reads pays none.

    The temporary name is unique per process and thread, so concurrent writers of the
    same file never write into each other's temporary file.
    """
    path = Path(path)
    tmp = f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    dir_fd = open_dir(path.parent)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        shown = path.with_name(tmp)
        try:
            fd = _open_in(dir_fd, tmp, flags, shown)
        except FileExistsError:
            os.unlink(tmp, dir_fd=dir_fd)  # ours, left by a killed run of this process id
            fd = _open_in(dir_fd, tmp, flags, shown)
        try:
            try:
                write_all(fd, data)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
        if durable:
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def log_to(path: str | os.PathLike[str], limit: int) -> None:
    """Send this process's log records (INFO and up) to the private file at `path`,
    started afresh once it grew past `limit` bytes (for detached workers: the automatic
    prune and push). Nothing happens when it cannot be opened: only a log."""
    import logging  # only here: every command of the CLI imports this module

    try:
        fd = open_append(path)
        if os.fstat(fd).st_size > limit:
            os.ftruncate(fd, 0)
        handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def place_marker(path: str | os.PathLike[str]) -> bool:
    """An empty 0600 file at `path`, in a real directory (created 0700 if missing). A
    symlink (or FIFO) planted at that name is removed, never followed; a directory above
    it that is a symlink makes it give up (False)."""
    path = Path(path)
    with _real_dir(path.parent, create=True) as dir_fd:
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
    """Remove `path` if the directories above it are real (never through a symlink)."""
    path = Path(path)
    with _real_dir(path.parent, create=False) as dir_fd:
        if dir_fd is None:
            return False
        try:
            os.unlink(path.name, dir_fd=dir_fd)
        except FileNotFoundError:
            return False
    return True


@contextmanager
def _real_dir(path: Path, *, create: bool) -> Iterator[int | None]:
    """`open_dir`, or None when a symlink (or nothing) is in the way."""
    try:
        fd = open_dir(path, create=create)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)
