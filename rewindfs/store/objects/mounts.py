"""Which filesystems are mounted where (this process's view, /proc/self/mountinfo)."""

from __future__ import annotations

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
