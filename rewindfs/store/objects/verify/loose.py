"""Loose objects read and verified in Python: `objects/xx/yyyy…`, a zlib stream of
`<type> <size>\\0<body>`.

Stock libgit2 (up to 1.9.x, libgit2 issue 7342) spins forever inflating a loose
object whose zlib stream is cut short. This module reads one without libgit2 and
says precisely what is wrong with it, for the fallback read path (store.objects.odbguard),
for naming damaged files in errors (store.objects.damage) and for `rewind check`.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from rewindfs.errors import StoreDamaged

TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
HEADER_MAX = 64  # "<type> <size>\0" is far shorter; git's own limit is 32


def path_of(objects_dir: Path, oid: str) -> Path:
    return objects_dir / oid[:2] / oid[2:]


def read_verified(path: Path, oid: str | None = None) -> tuple[int, bytes]:
    """(type number, body) of the loose object at `path`; StoreDamaged unless the zlib
    stream is complete, the header well-formed, the size as declared and (given `oid`)
    the hash right. FileNotFoundError when there is no such file."""
    with open(path, "rb") as f:
        raw = f.read()
    kind, body = inflate(raw, path)
    if oid is not None and _hash(kind, body) != oid:
        raise StoreDamaged(path, "content does not match its id")
    return TYPES[kind], body


def read_header(path: Path) -> tuple[int, int]:
    """(type number, declared size) from the first bytes of the object's zlib stream."""
    with open(path, "rb") as f:
        raw = f.read(4096)
    d = zlib.decompressobj()
    try:
        head = d.decompress(raw, HEADER_MAX)
    except zlib.error as exc:
        raise StoreDamaged(path, f"corrupt zlib stream: {exc}") from None
    kind, size, _ = _parse_header(head, path)
    return TYPES[kind], size


def inflate(raw: bytes, path: Path) -> tuple[bytes, bytes]:
    """(type name, body) of a loose object's bytes `raw`, verified as read_verified does."""
    if not raw:
        raise StoreDamaged(path, "empty")
    d = zlib.decompressobj()
    try:
        data = d.decompress(raw)
    except zlib.error as exc:
        raise StoreDamaged(path, f"corrupt zlib stream: {exc}") from None
    if not d.eof:
        raise StoreDamaged(path, "truncated")
    if d.unused_data:
        raise StoreDamaged(path, "trailing garbage")
    kind, size, start = _parse_header(data, path)
    body = data[start:]
    if len(body) != size:
        raise StoreDamaged(path, f"holds {len(body)} bytes, declares {size}")
    return kind, body


def _parse_header(data: bytes, path: Path) -> tuple[bytes, int, int]:
    end = data.find(b"\0", 0, HEADER_MAX)
    if end < 0:
        raise StoreDamaged(path, "malformed header")
    kind, _, size = data[:end].partition(b" ")
    if kind not in TYPES or not size.isdigit():
        raise StoreDamaged(path, "malformed header")
    return kind, int(size), end + 1


def _hash(kind: bytes, body: bytes) -> str:
    h = hashlib.sha1(kind + b" " + str(len(body)).encode() + b"\0")
    h.update(body)
    return h.hexdigest()


def find_prefix(objects_dir: Path, prefix: str) -> list[str]:
    """Ids of the loose objects whose hex id starts with `prefix` (>= 2 digits)."""
    prefix = prefix.lower()
    try:
        names = os.listdir(objects_dir / prefix[:2])
    except OSError:
        return []
    rest = prefix[2:]
    return [prefix[:2] + n for n in names if n.startswith(rest) and len(n) == 38]


def all_ids(objects_dir: Path) -> Iterator[str]:
    """Every loose object id (names that are not 38 hex digits are skipped)."""
    try:
        folders = sorted(os.listdir(objects_dir))
    except OSError:
        return
    for folder in folders:
        if len(folder) != 2 or not _is_hex(folder):
            continue
        try:
            names = sorted(os.listdir(objects_dir / folder))
        except OSError:
            continue
        for name in names:
            if len(name) == 38 and _is_hex(name):
                yield folder + name


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)
