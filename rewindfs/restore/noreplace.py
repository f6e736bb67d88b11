"""Putting a new file in place without ever replacing one that appeared meanwhile.

A restore plans to create a file where nothing was; by the time it renames its
temporary file there, a person may have saved one (an editor, a build). A plain
rename would replace that file silently, and it is in no snapshot. renameat2(2)
with RENAME_NOREPLACE fails instead (EEXIST). Where the filesystem lacks the flag
(EINVAL: some network and FUSE filesystems), a hard link does the same (link(2)
never replaces); where it lacks hard links too (FAT, some FUSE filesystems), the
file is copied to its name opened with O_EXCL, which never replaces either (a
reader may then see it half written, as with any write in place). Off Linux, or with
REWIND_PORTABLE=renameat2 (rewindfs.portable), the hard link is the first way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

from rewindfs import portable
from rewindfs.store.objects import durable

RENAME_NOREPLACE = 1  # <linux/fs.h>
_UNSUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP)
_NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK)

try:
    _renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    _renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.c_uint)
except (OSError, AttributeError):  # pragma: no cover - glibc < 2.28, or not Linux
    _renameat2 = None


def rename(dir_fd: int, src: bytes, dst: bytes) -> None:
    """Rename `src` to `dst`, both in the directory `dir_fd`, unless `dst` exists
    (FileExistsError, and `src` stays)."""
    if _renameat2 is not None and portable.linux("renameat2"):
        if _renameat2(dir_fd, src, dir_fd, dst, RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in _UNSUPPORTED:
            raise OSError(err, os.strerror(err), os.fsdecode(dst))
    link(dir_fd, src, dst)


def link(dir_fd: int, src: bytes, dst: bytes) -> None:
    """`rename` where renameat2's flag is missing: a hard link, then the old name removed."""
    try:
        os.link(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        copy(dir_fd, src, dst)
        return
    os.unlink(src, dir_fd=dir_fd)


def copy(dir_fd: int, src: bytes, dst: bytes) -> None:
    """`rename` without hard links: `dst` created exclusively and filled from `src`."""
    st = os.stat(src, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src, dir_fd=dir_fd), dst, dir_fd=dir_fd)  # never replaces
    else:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        source = os.open(src, flags, dir_fd=dir_fd)
        try:
            out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                          | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
            try:
                while chunk := os.read(source, 1 << 20):
                    durable.write_all(out, chunk)
                os.fchmod(out, stat.S_IMODE(st.st_mode))
                os.fsync(out)
            finally:
                os.close(out)
        finally:
            os.close(source)
    os.unlink(src, dir_fd=dir_fd)
