"""Pack files and their indexes, read without libgit2: which pack holds an object, and
whether a pack or index is intact (sizes, format, checksums), as `git verify-pack` checks.

Used to name the damaged file behind a failed read (store.objects.damage) and by `rewind check`;
`pack_files` tells caches whether the packs they were made under are still untouched.
Only version-2 indexes exist in practice (git writes nothing else since 2007).
"""

from __future__ import annotations

import hashlib
import mmap
import struct
from pathlib import Path

from rewindfs.store.objects.layout import pack_files  # noqa: F401 - offered here too

IDX_MAGIC = b"\377tOc"
PACK_MAGIC = b"PACK"
HASH = 20  # sha1
FANOUT = 8 + 256 * 4


def indexes(objects_dir: Path) -> list[Path]:
    try:
        return sorted((objects_dir / "pack").glob("pack-*.idx"))
    except OSError:
        return []


def index_problem(idx: Path) -> str | None:
    """What is wrong with a pack index (None: its format and checksum are right)."""
    try:
        data = idx.read_bytes()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    if len(data) < FANOUT + 2 * HASH or data[:4] != IDX_MAGIC or data[4:8] != b"\0\0\0\2":
        return "not a pack index (bad header or too short)"
    count = struct.unpack(">I", data[FANOUT - 4:FANOUT])[0]
    large = sum(1 for i in range(count) if _offset_word(data, count, i) & 0x80000000)
    expected = FANOUT + count * (HASH + 4 + 4) + large * 8 + 2 * HASH
    if len(data) != expected:
        return f"truncated or padded ({len(data)} bytes, expected {expected})"
    if hashlib.sha1(data[:-HASH]).digest() != data[-HASH:]:
        return "checksum mismatch"
    return None


def pack_problem(pack: Path) -> str | None:
    """What is wrong with a pack file: header, object count against its index, checksum."""
    idx = pack.with_suffix(".idx")
    try:
        with open(pack, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if len(data) < 12 + HASH or data[:4] != PACK_MAGIC:
                return "not a pack (bad header or too short)"
            count = struct.unpack(">I", data[8:12])[0]
            digest = hashlib.sha1(data[: len(data) - HASH]).digest()
            trailer = data[len(data) - HASH:]
    except (OSError, ValueError) as exc:
        return f"unreadable: {getattr(exc, 'strerror', None) or exc}"
    if digest != trailer:
        return "checksum mismatch (truncated or overwritten)"
    try:
        idx_data = idx.read_bytes()
    except OSError:
        return "its index is missing"
    if len(idx_data) >= FANOUT and idx_data[:4] == IDX_MAGIC:
        if struct.unpack(">I", idx_data[FANOUT - 4:FANOUT])[0] != count:
            return "object count differs from its index"
        if idx_data[-2 * HASH:-HASH] != trailer:
            return "its index belongs to another pack"
    return None


def containing(objects_dir: Path, oid: str) -> Path | None:
    """The pack (.pack path) whose index lists `oid`, if any (damaged indexes are skipped)."""
    raw = bytes.fromhex(oid)
    for idx in indexes(objects_dir):
        if _lists(idx, raw):
            return idx.with_suffix(".pack")
    return None


def listed_ids(idx: Path) -> list[str]:
    """Every object id (hex) a pack index lists; [] for a missing or damaged one."""
    try:
        data = idx.read_bytes()
    except OSError:
        return []
    if len(data) < FANOUT or data[:4] != IDX_MAGIC:
        return []
    count = struct.unpack(">I", data[FANOUT - 4: FANOUT])[0]
    raw = data[FANOUT: FANOUT + HASH * count]
    return [raw[j: j + HASH].hex() for j in range(0, len(raw) - HASH + 1, HASH)]


def _lists(idx: Path, raw: bytes) -> bool:
    try:
        with open(idx, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if len(data) < FANOUT or data[:4] != IDX_MAGIC:
                return False
            first = raw[0]
            lo = struct.unpack(">I", data[8 + 4 * (first - 1): 8 + 4 * first])[0] if first else 0
            hi = struct.unpack(">I", data[8 + 4 * first: 12 + 4 * first])[0]
            while lo < hi:
                mid = (lo + hi) // 2
                at = FANOUT + mid * HASH
                if at + HASH > len(data):
                    return False
                name = data[at: at + HASH]
                if name == raw:
                    return True
                if name < raw:
                    lo = mid + 1
                else:
                    hi = mid
    except (OSError, ValueError, struct.error):
        return False
    return False


def _offset_word(data: bytes, count: int, i: int) -> int:
    at = FANOUT + count * (HASH + 4) + i * 4
    if at + 4 > len(data):
        return 0
    return struct.unpack(">I", data[at: at + 4])[0]
