"""What reaches the disk before what names it: git's `core.fsync=committed` discipline.

A kill loses only what a process had not written yet; a power cut (or a kernel crash)
loses whatever the kernel had not written back, in any order, a rename included. So
whatever names something (a ref, an index entry, the restore journal, a file's name
after a rename) must reach the disk after what it names:

* libgit2's objects, commits and refs: fsynced by libgit2 itself, each file and then
  its directory, once `enable_libgit2` has run (libgit2's default is no fsync at all).
  git, when rewindfs runs it, gets `core.fsync=committed` (gitcli).
* packs rewindfs writes (packwrite): pack and idx fsynced, renamed, directory fsynced.
* rewindfs's own files (private.write_atomic, the restore journal): the file fsynced,
  renamed into place, its directory fsynced.
* restored files (restore.apply): written under a temp name, synced (an fsync each
  for a few files, one `syncfs` for a batch of many), renamed, then each directory
  whose names changed fsynced once.

The working-tree index of a project (its stat cache) is not fsynced, as git does not
by default: after a power cut a damaged one is dropped and rebuilt (capture.workdir).
"""

from __future__ import annotations

import os
import threading

_libgit2_done = False
_guard = threading.Lock()


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write all of `data` to `fd` (os.write may write less than it was given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def fsync_dir(path: str | bytes | os.PathLike) -> None:
    """Make the names in directory `path` durable (what a rename or create changed)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def syncfs(fd: int) -> None:
    """Flush everything written to the filesystem that holds `fd` (data and names) to
    its disk: one call for a batch of files instead of an fsync each; sync(2) where
    syncfs(2) is missing."""
    import ctypes  # (here: readers import this module and never sync)

    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        os.sync()
        return
    if call(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def enable_libgit2() -> None:
    """libgit2 fsyncs every object, commit and ref it writes, and their directories.

    A process-wide libgit2 setting: in an agent's process (the Python API) other
    pygit2 users get durable writes too, which costs them time but never data.
    """
    global _libgit2_done
    if _libgit2_done:
        return
    import pygit2

    with _guard:
        pygit2.settings.enable_fsync_gitdir(True)
        _libgit2_done = True
