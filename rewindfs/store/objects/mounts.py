"""Which filesystems are mounted where (this process's view, /proc/self/mountinfo)."""

from __future__ import annotations

import os
import re
from pathlib import Path

REWINDFS_FSTYPE = "fuse.rewindfs"  # what `rewind mount` shows up as
MOUNTINFO = Path("/proc/self/mountinfo")
_OCTAL = re.compile(rb"\\([0-7]{3})")


def mounts() -> list[tuple[bytes, str]]:
    """(mount point, filesystem type) of every mount, in mount order; [] when unknown."""
    try:
        raw = MOUNTINFO.read_bytes()
    except OSError:
        return []
    out = []
    for line in raw.splitlines():
        head, sep, tail = line.partition(b" - ")
        fields = head.split(b" ")
        if not sep or len(fields) < 5:
            continue
        point = _OCTAL.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4])
        out.append((point, tail.split(b" ", 1)[0].decode(errors="replace")))
    return out


def mounted_type(path: Path) -> str | None:
    """The filesystem type mounted exactly at `path` (the topmost), or None."""
    found = None
    target = os.fsencode(str(path))
    for point, kind in mounts():
        if point == target:
            found = kind
    return found


def rewindfs_mounts() -> list[bytes]:
    """Mount points of rewindfs mounts."""
    return [point for point, kind in mounts() if kind == REWINDFS_FSTYPE]


def under(root: bytes, points: list[bytes]) -> list[bytes]:
    """The `points` strictly inside directory `root`, relative to it."""
    prefix = root.rstrip(b"/") + b"/"
    return sorted({p[len(prefix):] for p in points
                   if p.startswith(prefix) and len(p) > len(prefix)})


def inside(path: bytes, points: list[bytes]) -> bytes | None:
    """The point among `points` that `path` is (or is inside of), if any."""
    for point in points:
        if path == point or path.startswith(point.rstrip(b"/") + b"/"):
            return point
    return None


def refuse_inside_mount(path: str | os.PathLike[str]) -> None:
    """Refuse to checkpoint from (or of) a directory inside a rewindfs mount: what is
    there is a checkpoint, not a project."""
    from rewindfs.errors import Refused
    from rewindfs.store.objects.layout import normalize_workdir

    path = normalize_workdir(path)
    mount = inside(os.fsencode(str(path)), rewindfs_mounts())
    if mount is not None:
        raise Refused(f"refusing to checkpoint {path}: it is inside the rewindfs mount at "
                      f"{os.fsdecode(mount)} (checkpoints are read-only copies)")
