"""Writing many new objects as one git pack (with its .idx, version 2) instead of loose files.

A first checkpoint of a big tree writes thousands of objects; as loose objects that
is one file (create, write, rename) per object, which costs more than hashing and
compressing them. A pack is one sequential file. The format is small and stable
(git's Documentation/gitformat-pack.txt):

    pack: "PACK", version 2, object count; per object a type+size varint header and
          the zlib-deflated content; SHA-1 of everything before it
    idx:  magic, version 2, fan-out table of 256 cumulative counts by first oid byte,
          the sorted oids, the CRC-32 of each object's packed bytes, 31-bit offsets
          (with a 64-bit table for offsets past 2 GiB), the pack's SHA-1, its own SHA-1

Written here rather than by libgit2's packbuilder (which wants the objects in an
odb first, then deflates them again) or git's index-pack (which inflates and hashes
every object again in another process): the capture already holds each object's
oid and deflated bytes, so the idx is just their sorted table.

Crash safety: both files are built under temporary names in objects/pack/ (git's own
`tmp_` prefix, which `git gc`/`git prune` clean up when stale), fsynced, then renamed
pack first and idx last. Readers (git and libgit2) only see a pack through its idx, so
a pack is either absent or complete; nothing refers to its objects before `finish`
returns.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from array import array
from collections.abc import Iterable
from pathlib import Path

from rewindfs.store.objects.durable import fsync_dir, write_all

try:  # ISA-L's deflate: ~4x zlib's speed at level 1, same format, and it frees the GIL
    from isal.isal_zlib import compress as _compress
except ImportError:  # pragma: no cover - isal has wheels for every platform we run on
    from zlib import compress as _compress

BLOB, TREE, COMMIT = 3, 2, 1  # pack object types (OBJ_BLOB, OBJ_TREE, OBJ_COMMIT)
_HEADER = struct.Struct(">4sII")
_IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"
_MAX_SMALL_OFFSET = 0x7FFFFFFF
FILE_MODE = 0o444  # what git and libgit2 give packs and idx files
# Fast compression: checkpoints are written on an agent's critical path, and git gc
# recompresses whatever it repacks. Level 1 costs ~10% in size over git's default.
LEVEL = 1


def deflate(data: bytes) -> bytes:
    return _compress(data, LEVEL)


def object_header(kind: int, size: int) -> bytes:
    """A packed object's header: type in bits 4-6 of the first byte, size as a varint."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


class PackWriter:
    """One pack being written. `add` objects, then `finish` (or `abort`).

    Not thread-safe: one writer per thread of work.
    """

    def __init__(self, objects_dir: Path):
        self.pack_dir = objects_dir / "pack"
        self.pack_dir.mkdir(parents=True, exist_ok=True)
        self._tmp_pack = self._tmp_name("pack")
        fd = os.open(self._tmp_pack, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self._file = os.fdopen(fd, "w+b", buffering=1 << 20)
        self._file.write(_HEADER.pack(b"PACK", 2, 0))  # the count is filled in by finish()
        self._offset = _HEADER.size
        self._entries: dict[bytes, tuple[int, int]] = {}  # oid -> (offset, crc32)
        self._tmp_idx: Path | None = None

    def _tmp_name(self, kind: str) -> Path:
        return self.pack_dir / f"tmp_{kind}_rewind_{os.getpid()}_{id(self):x}"

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, oid: bytes) -> bool:
        return oid in self._entries

    @property
    def oids(self) -> set[bytes]:
        return set(self._entries)

    @property
    def size(self) -> int:
        return self._offset

    def add(self, oid: bytes, kind: int, size: int, deflated: bytes) -> None:
        """Append one object: `deflated` is zlib's compression of its `size` content bytes
        (without git's loose "blob <size>\\0" header). An oid already added is skipped."""
        if oid in self._entries:
            return
        header = object_header(kind, size)
        self._file.write(header)
        self._file.write(deflated)
        self._entries[oid] = (self._offset, zlib.crc32(deflated, zlib.crc32(header)))
        self._offset += len(header) + len(deflated)

    def finish(self) -> str | None:
        """Complete, sync and publish the pack; its name (`pack-<sha1>`), None when empty."""
        name = self.seal()
        if name is not None:
            self.publish(name)
        return name

    def seal(self) -> str | None:
        """Complete and sync the pack and its idx under their temp names (not yet
        visible); its name, None when empty. `publish` makes it visible."""
        if not self._entries:
            self.abort()
            return None
        f = self._file
        f.seek(0)
        f.write(_HEADER.pack(b"PACK", 2, len(self._entries)))
        f.flush()
        checksum = _sha1_of(f.fileno(), self._offset)
        f.seek(self._offset)
        f.write(checksum)
        f.flush()
        os.fsync(f.fileno())
        f.close()
        self._tmp_idx = self._tmp_name("idx")
        _write_synced(self._tmp_idx, self._idx_bytes(checksum))
        return "pack-" + checksum.hex()

    def publish(self, name: str) -> None:
        """Rename a sealed pack into place (also from another process than the one that
        wrote it: `sealed_files` names its temp files)."""
        tmp_pack, tmp_idx = self.sealed_files()
        publish_sealed(self.pack_dir, name, tmp_pack, tmp_idx)

    def sealed_files(self) -> tuple[Path, Path]:
        assert self._tmp_idx is not None, "seal() first"
        return self._tmp_pack, self._tmp_idx

    def abort(self) -> None:
        """Drop the unfinished pack (nothing refers to it). Never raises: on a full disk
        closing the file flushes its buffer and fails again, and the temp files must go
        all the same (else the space is never handed back)."""
        if not self._file.closed:
            try:
                self._file.close()
            except OSError:
                pass   # the flush failed; the descriptor is closed all the same
        for tmp in (self._tmp_pack, self._tmp_idx):
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _idx_bytes(self, pack_checksum: bytes) -> bytes:
        oids = sorted(self._entries)
        fanout = array("I", [0] * 256)
        for oid in oids:
            fanout[oid[0]] += 1
        running = 0
        for i in range(256):
            running += fanout[i]
            fanout[i] = running
        crcs = array("I")
        small = array("I")
        large = array("Q")
        for oid in oids:
            offset, crc = self._entries[oid]
            crcs.append(crc)
            if offset > _MAX_SMALL_OFFSET:
                small.append(0x80000000 | len(large))
                large.append(offset)
            else:
                small.append(offset)
        for table in (fanout, crcs, small, large):
            if _LITTLE_ENDIAN:
                table.byteswap()
        body = b"".join((_IDX_MAGIC, fanout.tobytes(), b"".join(oids), crcs.tobytes(),
                         small.tobytes(), large.tobytes(), pack_checksum))
        return body + hashlib.sha1(body, usedforsecurity=False).digest()


def publish_sealed(pack_dir: Path, name: str, tmp_pack: Path, tmp_idx: Path) -> None:
    """Make a sealed pack visible: read-only as git makes them, the pack renamed first
    and the idx last (the idx is what makes a pack visible), then the directory synced."""
    os.chmod(tmp_pack, FILE_MODE)
    os.chmod(tmp_idx, FILE_MODE)
    os.replace(tmp_pack, pack_dir / f"{name}.pack")
    os.replace(tmp_idx, pack_dir / f"{name}.idx")
    fsync_dir(pack_dir)


_LITTLE_ENDIAN = struct.pack("=I", 1) == struct.pack("<I", 1)


def add_trees(pack: PackWriter, entries: Iterable[tuple[bytes, int, bytes]]) -> bytes:
    """Add the tree objects for `entries` (path, mode, raw oid), sorted as in a git index;
    returns the root tree's oid.

    In index order a directory's entries are contiguous, and its place among its
    siblings is where its first entry appears, which is also its place in git's tree
    order (a directory sorts as its name plus "/"); so one pass with a stack of open
    directories builds every tree.
    """
    stack: list[tuple[bytes, list, list | None]] = [(b"", [], None)]  # (name, entries, slot)
    for path, mode, oid in entries:
        parts = path.split(b"/")
        depth = 0  # directories of `path` that are open already
        while (depth + 1 < len(stack) and depth < len(parts) - 1
               and stack[depth + 1][0] == parts[depth]):
            depth += 1
        while len(stack) > depth + 1:
            _close_tree(pack, stack.pop())
        for name in parts[depth:-1]:
            slot = [b"40000", name, b""]
            stack[-1][1].append(slot)
            stack.append((name, [], slot))
        stack[-1][1].append((b"%o" % mode, parts[-1], oid))
    while len(stack) > 1:
        _close_tree(pack, stack.pop())
    return _tree_object(pack, stack[0][1])


def _close_tree(pack: PackWriter, frame: tuple[bytes, list, list | None]) -> None:
    _name, entries, slot = frame
    slot[2] = _tree_object(pack, entries)


def tree_content(entries: Iterable[tuple[int, bytes, bytes]]) -> bytes:
    """A tree object's content from its entries (mode, name, raw oid), in git's order:
    by name, a directory's name compared as if it ended in "/"."""
    ordered = sorted(entries, key=lambda e: e[1] + b"/" if e[0] == 0o40000 else e[1])
    return _join((b"%o" % mode, name, oid) for mode, name, oid in ordered)


def _join(entries: Iterable[tuple[bytes, bytes, bytes]]) -> bytes:
    return b"".join(b"%s %s\0%s" % (mode, name, oid) for mode, name, oid in entries)


def _tree_object(pack: PackWriter, entries: list) -> bytes:
    content = _join(entries)
    oid = hashlib.sha1(b"tree %d\0" % len(content), usedforsecurity=False)
    oid.update(content)
    raw = oid.digest()
    pack.add(raw, TREE, len(content), deflate(content))
    return raw


def _sha1_of(fd: int, length: int) -> bytes:
    h = hashlib.sha1(usedforsecurity=False)
    pos = 0
    while pos < length:
        chunk = os.pread(fd, min(1 << 22, length - pos), pos)
        if not chunk:
            raise OSError(f"pack file shrank while being written ({pos} of {length} bytes)")
        h.update(chunk)
        pos += len(chunk)
    return h.digest()


def _write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
