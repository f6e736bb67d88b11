"""Where a watch can be trusted: not on a filesystem whose changes made elsewhere send no
inotify events (network filesystems, FUSE), and what limits the kernel sets on watches.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Filesystems on which changes made by another machine or process behind it send no
# inotify events.
NO_EVENTS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs", "ceph", "glusterfs",
             "afs", "ncpfs", "coda", "lustre", "gpfs", "beegfs")


def unwatchable(root: bytes) -> str | None:
    """Why the project at `root` cannot be watched (None: it can)."""
    from rewindfs.store.objects import mounts

    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return "the project directory is not a directory"
    except OSError as exc:
        return f"the project directory cannot be read: {exc.strerror}"
    best, kind = b"", ""
    for point, fstype in mounts.mounts():
        inside = root == point or root.startswith(point.rstrip(b"/") + b"/")
        if inside and len(point) >= len(best):
            best, kind = point, fstype
    base = kind.split(".", 1)[0]
    if base == "fuse" or base in NO_EVENTS or kind in NO_EVENTS:
        return f"it lies on a {kind} filesystem, whose changes made elsewhere send no events"
    return None


def watch_limit() -> str:
    try:
        return Path("/proc/sys/fs/inotify/max_user_watches").read_text().strip()
    except OSError:
        return "?"
