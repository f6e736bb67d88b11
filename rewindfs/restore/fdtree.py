"""The working tree reached only through directory descriptors: no write leaves the project.

No write, removal or mode change ever leaves the project, whatever links are planted in it.

Every directory is opened relative to its parent with O_NOFOLLOW, starting from
a descriptor of the project root, so a symlink in the working tree can never
redirect a write elsewhere; a link that is in the way is replaced, not followed.
Each file is written to a temporary name in its own directory (`.<name>.rewind-
<8 hex>.tmp`, never captured; apply.tidy removes ones a killed restore left), made
durable, and renamed over the old one, so a file is either wholly old or wholly new,
after a kill or a power cut alike (`stage`, `place`, then `settle` fsyncs each
directory whose names changed). A file the plan creates never replaces one that
appeared since the plan was made (a person saving, a build): renameat2's
RENAME_NOREPLACE, or a hard link where the filesystem lacks it (noreplace).
Mode changes go through a descriptor of the file itself, opened without following
links, so a file swapped for a symlink meanwhile is never what gets chmod'ed.

Permissions are never widened: a file that is overwritten keeps its permission
bits (only the executable bit follows the checkpoint); a file or directory that is
created gets the mode recorded for it (store.history.files.modes) or, when none is, 0644/0755
(files) or 0755 (directories) less the process umask.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from dataclasses import dataclass
from typing import Any

from rewindfs import portable
from rewindfs.restore import noreplace
from rewindfs.restore.dirfds import DirFds, UnsafePath
from rewindfs.store.history import EXECUTABLE, Entry
from rewindfs.store.objects import durable

_PROC_FD = "/proc/self/fd"


SYNC_EACH = 16  # directories fsynced one by one; more are synced by one syncfs(2)


# A file's bytes: whole, or a big blob handed out in pieces (store.history.files.trees.Streamed:
# `size`, and `copy(sink)`), never whole in memory.
Blob = bytes | Any


@dataclass
class Staged:
    """A file written under its temporary name, not yet in place."""

    rel: bytes
    tmp: bytes
    create: bool  # the plan found nothing there: never replace what appeared since
    is_link: bool


class Tree:
    """Directory descriptors below one root, opened safely and cached for the restore.

    `modes`: permission bits recorded for paths of the target (store.history.files.modes).
    """

    def __init__(self, root: bytes, removable_dirs: set[bytes] | None = None,
                 modes: dict[bytes, int] | None = None):
        self.dirs = DirFds(root)
        self.root_fd = self.dirs.root_fd
        self.umask = process_umask()
        self.created = self.dirs.created  # made by this restore
        self.removable = removable_dirs  # None: any directory a delete leaves empty
        self.modes = modes or {}
        self.dirty = self.dirs.dirty  # directories whose names changed, not yet fsynced
        self.chmodded = False  # a mode changed that no directory fsync covers

    def close(self) -> None:
        self.dirs.close()

    def dir_fd(self, rel_dir: bytes, *, create: bool) -> int:
        """A descriptor of the directory (restore.dirfds), valid until the next call."""
        return self.dirs.open(rel_dir, create=create)

    def forget(self, rel_dir: bytes) -> None:
        self.dirs.forget(rel_dir)

    def remove(self, rel: bytes) -> None:
        parent, _, name = rel.rpartition(b"/")
        fd = self.dir_fd(parent, create=False)
        try:
            os.unlink(name, dir_fd=fd)
        except IsADirectoryError:
            os.rmdir(name, dir_fd=fd)
        self.dirty.add(parent)

    def prune_empty_dirs(self, rel: bytes) -> None:
        """Remove directories left empty above `rel`, up to (not including) the root."""
        parent = rel.rpartition(b"/")[0]
        while parent:
            if self.removable is not None and parent not in self.removable:
                return
            if not self._rmdir(parent):
                return
            parent = parent.rpartition(b"/")[0]

    def _rmdir(self, rel_dir: bytes) -> bool:
        up, _, name = rel_dir.rpartition(b"/")
        try:
            self.forget(rel_dir)
            os.rmdir(name, dir_fd=self.dir_fd(up, create=False))
        except OSError:
            return False
        self.dirty.discard(rel_dir)
        self.dirty.add(up)
        return True

    def drop_empty_removable(self) -> None:
        """Remove the removable directories (an undo: ones the restore made) left empty."""
        for rel_dir in sorted(self.removable or (), key=lambda d: d.count(b"/"), reverse=True):
            if rel_dir:
                self._rmdir(rel_dir)

    def stage(self, rel: bytes, entry: Entry, data: Blob, *, create: bool,
              sync: bool) -> Staged:
        """Write `data` under a temporary name next to `rel` (`sync`: fsynced now; else
        the caller syncs the batch with `sync_staged`); `place` puts it in place."""
        parent, _, name = rel.rpartition(b"/")
        fd = self.dir_fd(parent, create=True)
        tmp = b".%s.rewind-%s.tmp" % (name[:80], secrets.token_hex(4).encode())
        try:
            if entry.is_link:
                if not isinstance(data, bytes):  # a link target of megabytes: no such path
                    raise OSError(errno.ENAMETOOLONG, "symlink target too long", rel)
                os.symlink(data, tmp, dir_fd=fd)
            else:
                mode = self._file_mode(fd, name, rel, entry)
                out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                              | os.O_CLOEXEC, 0o600, dir_fd=fd)
                try:
                    if isinstance(data, bytes):
                        durable.write_all(out, data)
                    else:
                        data.copy(lambda piece: durable.write_all(out, piece))
                    os.fchmod(out, mode)  # exact: neither the umask nor 0600 is meant
                    if sync:
                        os.fsync(out)
                finally:
                    os.close(out)
        except BaseException:
            self._unlink_quietly(fd, tmp)
            raise
        return Staged(rel, tmp, create, entry.is_link)

    def sync_staged(self, staged: list[Staged]) -> None:
        """Make the data of files staged without `sync` durable: one syncfs(2) of the
        project's filesystem (a restore writes no file elsewhere)."""
        if staged:
            durable.syncfs(self.root_fd)

    def place(self, staged: Staged) -> bool:
        """Rename a staged file into place; False when the plan created it and a file
        appeared at its name meanwhile (that one is kept, the staged one dropped)."""
        parent, _, name = staged.rel.rpartition(b"/")
        fd = self.dir_fd(parent, create=True)
        try:
            if staged.create:
                placed = self._place_new(fd, staged, name)
            else:
                self._replace(fd, staged.tmp, name, staged.rel)
                placed = True
        except BaseException:
            self._unlink_quietly(fd, staged.tmp)
            raise
        self.dirty.add(parent)
        return placed

    def discard(self, staged: Staged) -> None:
        """Remove a staged file that will not be placed (its directory may be gone)."""
        parent = staged.rel.rpartition(b"/")[0]
        try:
            self._unlink_quietly(self.dir_fd(parent, create=False), staged.tmp)
        except OSError:
            pass

    def settle(self) -> None:
        """Make every name this tree changed durable: each such directory fsynced once
        (one that is gone since needs nothing); a changed mode, by one syncfs."""
        if len(self.dirty) > SYNC_EACH:
            durable.syncfs(self.root_fd)  # one flush of the project's filesystem
        else:
            for rel_dir in sorted(self.dirty, key=lambda d: d.count(b"/"), reverse=True):
                try:
                    os.fsync(self.dir_fd(rel_dir, create=False))
                except (FileNotFoundError, NotADirectoryError, UnsafePath):
                    pass
        self.dirty.clear()
        if self.chmodded:
            durable.syncfs(self.root_fd)
            self.chmodded = False

    def _place_new(self, fd: int, staged: Staged, name: bytes) -> bool:
        for _ in range(2):
            try:
                noreplace.rename(fd, staged.tmp, name)
                return True
            except FileExistsError:
                what = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISDIR(what.st_mode):
                    self._unlink_quietly(fd, staged.tmp)
                    return False  # a file appeared since the plan: the person's, kept
                # An (emptied) directory stands where the file goes: remove it (a full
                # one fails, and so does this file), then try again.
                self.forget(staged.rel)
                os.rmdir(name, dir_fd=fd)
        raise FileExistsError(errno.EEXIST, "something keeps appearing", staged.rel)

    @staticmethod
    def _unlink_quietly(fd: int, name: bytes) -> None:
        try:
            os.unlink(name, dir_fd=fd)
        except OSError:
            pass

    def _file_mode(self, dir_fd: int, name: bytes, rel: bytes, entry: Entry) -> int:
        """The current file's bits (exec following `entry`), else the recorded mode, else
        the default less the umask."""
        try:
            current = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISREG(current.st_mode):
                return with_exec(stat.S_IMODE(current.st_mode) & 0o777, entry.mode == EXECUTABLE)
        except FileNotFoundError:
            pass
        return self.new_file_mode(rel, entry)

    def new_file_mode(self, rel: bytes, entry: Entry) -> int:
        recorded = self.modes.get(rel)
        if recorded is not None and stat.S_ISREG(recorded):
            return with_exec(recorded & 0o777, entry.mode == EXECUTABLE)
        return (0o755 if entry.mode == EXECUTABLE else 0o644) & ~self.umask

    def new_dir_mode(self, rel_dir: bytes) -> int:
        recorded = self.modes.get(rel_dir)
        if recorded is not None and stat.S_ISDIR(recorded):
            return recorded & 0o3777  # setgid and sticky bits included; never setuid
        return 0o755 & ~self.umask

    def _replace(self, fd: int, tmp: bytes, name: bytes, rel: bytes) -> None:
        try:
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except (IsADirectoryError, OSError) as exc:
            if not isinstance(exc, IsADirectoryError) and exc.errno not in (errno.EISDIR,
                                                                              errno.ENOTEMPTY):
                raise
            # An (emptied) directory stands where the file goes: remove it, then retry.
            self.forget(rel)
            os.rmdir(name, dir_fd=fd)
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)

    def chmod(self, rel: bytes, entry: Entry) -> None:
        """Make the executable bit follow `entry` on the regular file at `rel`; anything
        else there (a symlink swapped in, say) is left alone."""
        parent, _, name = rel.rpartition(b"/")
        fd = self.dir_fd(parent, create=False)
        file_fd = _open_file(name, fd)
        if file_fd is None:
            return   # a symlink (or a fifo, a socket...) stands there now
        try:
            st = os.fstat(file_fd)
            if not stat.S_ISREG(st.st_mode):
                return
            mode = with_exec(stat.S_IMODE(st.st_mode) & 0o777, entry.mode == EXECUTABLE)
            if mode != stat.S_IMODE(st.st_mode):
                _fchmod_path_fd(file_fd, mode, fd, name)
                self.chmodded = True
        finally:
            os.close(file_fd)

    def finish(self) -> None:
        """Give the directories this restore created their modes (deepest first), each
        fsynced after (its mode is in its own inode)."""
        each = len(self.created) <= SYNC_EACH
        for rel_dir in sorted(self.created, key=lambda d: d.count(b"/"), reverse=True):
            try:
                fd = self.dir_fd(rel_dir, create=False)
                os.fchmod(fd, self.new_dir_mode(rel_dir))
                if each:
                    os.fsync(fd)
            except OSError:
                pass  # removed since (an undo dropping it), or a link in the way now
        if not each:
            durable.syncfs(self.root_fd)

    def current_mode(self, rel: bytes) -> int | None:
        """st_mode of what is at `rel` (links not followed), None if nothing (or no
        real directory above it)."""
        parent, _, name = rel.rpartition(b"/")
        try:
            fd = self.dir_fd(parent, create=False)
            return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except OSError:
            return None


def with_exec(mode: int, executable: bool) -> int:
    """`mode` with the executable bits following the checkpoint, never widening reads:
    on: x for each class that may read (user x at least); off: no x at all."""
    if bool(mode & 0o111) == executable:
        return mode
    if not executable:
        return mode & ~0o111
    return mode | ((mode & 0o444) >> 2) | 0o100


def _open_file(name: bytes, dir_fd: int) -> int | None:
    """A descriptor of the file `name` in `dir_fd`, links not followed: O_PATH (no access
    to its contents needed), else (off Linux, or REWIND_PORTABLE=o_path) opened for
    reading or, failing that, writing, never blocking; None when a symlink (or something
    that cannot be opened so, a fifo without a writer) stands there."""
    if portable.linux("o_path"):
        return os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    for access in (os.O_RDONLY, os.O_WRONLY):
        try:
            return os.open(name, access | flags, dir_fd=dir_fd)
        except PermissionError:
            continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO):   # a link; a fifo without a reader
                return None
            raise
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(name))


def _fchmod_path_fd(path_fd: int, mode: int, dir_fd: int, name: bytes) -> None:
    """chmod the file `path_fd` holds. fchmod refuses O_PATH descriptors; the /proc link
    names that very inode, so no path is looked up again. A descriptor opened for reading
    or writing (_open_file's fallback) takes fchmod itself. Without /proc (or with
    REWIND_PORTABLE=proc) the file is opened read-only without following links (needs
    read permission) and changed only if it is still the same inode."""
    if not portable.linux("o_path"):
        os.fchmod(path_fd, mode)
        return
    if portable.linux("proc"):
        try:
            os.chmod(f"{_PROC_FD}/{path_fd}", mode)
            return
        except FileNotFoundError:
            if os.path.isdir(_PROC_FD):
                raise
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st, held = os.fstat(fd), os.fstat(path_fd)
        if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def process_umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)
    from /proc; off Linux (or with REWIND_PORTABLE=proc) set and put back at once: a
    restore's other threads (the watchdog's heartbeat) create no files meanwhile."""
    if portable.linux("proc"):
        try:
            with open("/proc/self/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("Umask:"):
                        return int(line.split()[1], 8)
        except (OSError, ValueError):
            pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
