"""Which filesystems are mounted where (this process's view, /proc/self/mountinfo; off
Linux, or with REWIND_PORTABLE=proc, what mount(8) lists).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REWINDFS_FSTYPE = "fuse.rewindfs"  # what `rewind mount` shows up as
MOUNTINFO = Path("/proc/self/mountinfo")
_OCTAL = re.compile(rb"\\([0-7]{3})")


REWINDFS_FSNAME = "rewindfs"  # the FUSE fsname: macFUSE lists it where Linux has the type
# mount(8): Linux `SRC on POINT type TYPE (OPTIONS)`, macOS and the BSDs `SRC on POINT
# (TYPE, OPTIONS)`.
_MOUNT_LINE = re.compile(rb"^(?P<src>.*?) on (?P<point>/.*?)"
                         rb"(?: type (?P<type>\S+) \(.*\)| \((?P<bsd>[^,)]+)[,)].*)$")


def mounts() -> list[tuple[bytes, str]]:
    """(mount point, filesystem type) of every mount, in mount order; [] when unknown."""
    from rewindfs import portable

    if not portable.linux("proc"):
        return listed_by_mount()
    try:
        raw = MOUNTINFO.read_bytes()
    except OSError:
        return listed_by_mount()
    out = []
    for line in raw.splitlines():
        head, sep, tail = line.partition(b" - ")
        fields = head.split(b" ")
        if not sep or len(fields) < 5:
            continue
        point = _OCTAL.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4])
        out.append((point, tail.split(b" ", 1)[0].decode(errors="replace")))
    return out


def listed_by_mount(text: bytes | None = None) -> list[tuple[bytes, str]]:
    """`mounts` from mount(8)'s listing (`text`, else run here): a mount point holding
    " on " or " type " reads wrong, as mount(8) prints it unescaped. macFUSE names the
    type "macfuse": a mount whose source is rewindfs's fsname counts as rewindfs's."""
    if text is None:
        try:
            text = subprocess.run(["mount"], capture_output=True, timeout=10,
                                  env={**os.environ, "LC_ALL": "C"}).stdout
        except (OSError, subprocess.SubprocessError):
            return []
    out = []
    for line in text.splitlines():
        found = _MOUNT_LINE.match(line)
        if found is None:
            continue
        kind = (found.group("type") or found.group("bsd") or b"").decode(errors="replace")
        source = found.group("src").rsplit(b"/", 1)[-1]
        if source.startswith(REWINDFS_FSNAME.encode()) and "fuse" in kind:
            kind = REWINDFS_FSTYPE
        out.append((found.group("point"), kind))
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
