"""Where a project's checkpoints are in a live mount (for `rewind list` to show paths).

Asks the mount itself rather than recomputing its names, so the answer is what
`ls` shows even when project names carry collision suffixes. Imports nothing of the
mount's own machinery: `rewind list` uses it.
"""

from __future__ import annotations

import os
from pathlib import Path

from rewindfs.store.objects import mounts

# What the mount says about its directories (served by fs.nodes.project and fs.nodes.checkpoint).
XATTR_WORKDIR = b"user.rewind.workdir"
XATTR_HASH = "user.rewind.hash"


def our_mount(mountpoint: str | os.PathLike[str]) -> Path | None:
    """`mountpoint`, absolute, when a rewindfs mount is there; else None."""
    root = Path(mountpoint).expanduser().absolute()
    return root if mounts.mounted_type(root) == mounts.REWINDFS_FSTYPE else None


def mounted_checkpoints(mountpoint: str | os.PathLike[str] | None,
                        workdir: str | os.PathLike[str]) -> dict[str, Path]:
    """Commit id -> checkpoint directory of `workdir` under the rewindfs mount at
    `mountpoint` (None: not mounted); empty when nothing (or something else) is
    mounted there."""
    root = our_mount(mountpoint) if mountpoint is not None else None
    if root is None:
        return {}
    wanted = os.fsencode(str(workdir))
    try:
        for entry in os.scandir(root):
            if _xattr(entry.path, XATTR_WORKDIR.decode()) == wanted:
                return _checkpoints_in(Path(entry.path))
    except OSError:
        pass
    return {}


def _checkpoints_in(project: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for entry in os.scandir(project):
        if entry.is_dir(follow_symlinks=False):
            commit = _xattr(entry.path, XATTR_HASH)
            if commit:
                found[commit.decode()] = Path(entry.path)
    return found


def _xattr(path: str, name: str) -> bytes | None:
    try:
        return os.getxattr(path, name)
    except OSError:
        return None
