"""Carrying out a restore plan on disk, never writing outside the project.

Every directory is opened relative to its parent with O_NOFOLLOW, starting from
a descriptor of the project root, so a symlink in the working tree can never
redirect a write elsewhere; a link that is in the way is replaced, not followed.
Each file is written to a temporary name in its own directory and renamed over
the old one, so a file is either wholly old or wholly new.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from rewindfs.errors import StoreError
from rewindfs.restore.plan import CHMOD, DELETE, Plan
from rewindfs.store.trees import EXECUTABLE, Entry

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path component that is not a real directory (a symlink, a file)."""


@dataclass
class Outcome:
    written: list[bytes] = field(default_factory=list)
    deleted: list[bytes] = field(default_factory=list)
    created_dirs: list[bytes] = field(default_factory=list)
    failed: list[tuple[bytes, str]] = field(default_factory=list)
    not_attempted: list[bytes] = field(default_factory=list)


class Tree:
    """Directory descriptors below one root, opened safely and cached for the restore."""

    def __init__(self, root: bytes, removable_dirs: set[bytes] | None = None):
        self.root_fd = os.open(root, DIR_FLAGS)
        self.fds: dict[bytes, int] = {b"": self.root_fd}
        self.umask = _umask()
        self.created: list[bytes] = []
        self.removable = removable_dirs  # None: any directory a delete leaves empty

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()

    def dir_fd(self, rel_dir: bytes, *, create: bool) -> int:
        if rel_dir in self.fds:
            return self.fds[rel_dir]
        parent, _, name = rel_dir.rpartition(b"/")
        parent_fd = self.dir_fd(parent, create=create)
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            os.mkdir(name, 0o777 & ~self.umask, dir_fd=parent_fd)
            self.created.append(rel_dir)
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafePath(exc.errno, "a symlink or file is in the way", rel_dir) from exc
            raise
        self.fds[rel_dir] = fd
        return fd

    def forget(self, rel_dir: bytes) -> None:
        fd = self.fds.pop(rel_dir, None)
        if fd is not None:
            os.close(fd)

    def remove(self, rel: bytes) -> None:
        parent, _, name = rel.rpartition(b"/")
        fd = self.dir_fd(parent, create=False)
        try:
            os.unlink(name, dir_fd=fd)
        except IsADirectoryError:
            os.rmdir(name, dir_fd=fd)

    def prune_empty_dirs(self, rel: bytes) -> None:
        """Remove directories left empty above `rel`, up to (not including) the root."""
        parent = rel.rpartition(b"/")[0]
        while parent:
            if self.removable is not None and parent not in self.removable:
                return
            up, _, name = parent.rpartition(b"/")
            try:
                self.forget(parent)
                os.rmdir(name, dir_fd=self.dir_fd(up, create=False))
            except OSError:
                return
            parent = up

    def write(self, rel: bytes, entry: Entry, data: bytes) -> None:
        parent, _, name = rel.rpartition(b"/")
        fd = self.dir_fd(parent, create=True)
        tmp = b".%s.rewind-%s.tmp" % (name[:80], secrets.token_hex(4).encode())
        try:
            if entry.is_link:
                os.symlink(data, tmp, dir_fd=fd)
            else:
                mode = (0o777 if entry.mode == EXECUTABLE else 0o666) & ~self.umask
                out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                              | os.O_CLOEXEC, mode, dir_fd=fd)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(out, view):]
                    os.fchmod(out, mode)  # the umask applied at create; be exact
                finally:
                    os.close(out)
            self._replace(fd, tmp, name, rel)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise

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
        parent, _, name = rel.rpartition(b"/")
        fd = self.dir_fd(parent, create=False)
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            mode = (0o777 if entry.mode == EXECUTABLE else 0o666) & ~self.umask
            os.chmod(name, mode, dir_fd=fd, follow_symlinks=True)  # a regular file: no link


def apply(plan: Plan, root: bytes, read_blob: Callable[[str], bytes],
          removable_dirs: set[bytes] | None = None) -> Outcome:
    """Deletes first (deepest first), then writes (parents first), then mode changes.

    Directories a delete leaves empty are removed; with `removable_dirs` (an undo)
    only those, so a directory that was empty before the restore stays.

    A failing file is recorded and the rest continue, except when the disk is full
    or read-only, where the remaining actions are reported as not attempted.
    """
    outcome = Outcome()
    tree = Tree(root, removable_dirs)
    try:
        deletes = sorted((a for a in plan.actions if a.kind == DELETE), key=lambda a: a.path,
                         reverse=True)
        writes = [a for a in plan.actions if a.kind not in (DELETE, CHMOD)]
        chmods = [a for a in plan.actions if a.kind == CHMOD]
        queue = [*deletes, *writes, *chmods]
        for i, action in enumerate(queue):
            try:
                if action.kind == DELETE:
                    tree.remove(action.path)
                    tree.prune_empty_dirs(action.path)
                    outcome.deleted.append(action.path)
                elif action.kind == CHMOD:
                    tree.chmod(action.path, action.entry)
                    outcome.written.append(action.path)
                else:
                    tree.write(action.path, action.entry, read_blob(action.entry.oid))
                    outcome.written.append(action.path)
            except FileNotFoundError as exc:
                if action.kind == DELETE:
                    outcome.deleted.append(action.path)  # already gone: the goal holds
                else:
                    outcome.failed.append((action.path, exc.strerror or str(exc)))
            except StoreError as exc:  # an unreadable blob: that file fails, the rest go on
                outcome.failed.append((action.path, str(exc)))
            except OSError as exc:
                outcome.failed.append((action.path, exc.strerror or str(exc)))
                if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                    outcome.not_attempted.extend(a.path for a in queue[i + 1 :])
                    break
    finally:
        outcome.created_dirs = tree.created
        tree.close()
    return outcome


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
