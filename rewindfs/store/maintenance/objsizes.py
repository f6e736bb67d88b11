"""What objects take on disk, remembered: per object, and for the whole object database.

`rewind status` needs the on-disk size (compressed, or a delta in a pack: git's
`%(objectsize:disk)`) of every object the store keeps, and the bytes the object
database holds. Asking git each time costs a pass over every kept object. Sizes are
instead remembered in `caches/object-sizes` (20-byte id and 8-byte size per object)
under the packs they were measured in: a pack never changes, so the sizes stand as
long as those packs are untouched; an object measured loose is looked at again
(stat) only when a pack appeared since (it may have moved into it). What is not
known yet is a loose file's size, or asked of git in one batch. The database's own
size is scanned per loose-object directory, each remembered by its mtime, so a scan
reads only the directories a write touched since the last one.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterable
from pathlib import Path

from rewindfs.errors import StoreError
from rewindfs.store.maintenance.sizes import PACK_FRAME, disk_sizes, tree_bytes
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import CACHES, Layout, pack_files

TABLE = "object-sizes"
SCAN = "object-bytes.json"
LOOSE = 1 << 63  # set in a size measured on a loose object file
_ENTRY = struct.Struct("<20sQ")


class SizeTable:
    """On-disk sizes by object id (20 bytes), loaded, completed and saved."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.objects = layout.store / "objects"
        self.path = layout.store / CACHES / TABLE
        self.packs = pack_files(self.objects)
        self.sizes: dict[bytes, int] = {}
        self.changed = False
        self._load()

    def _load(self) -> None:
        try:
            raw = self.path.read_bytes()
            head, _, body = raw.partition(b"\n")
            measured_under = json.loads(head)
        except (OSError, ValueError):
            return
        if not isinstance(measured_under, dict) or len(body) % _ENTRY.size or any(
                self.packs.get(name) != stat for name, stat in measured_under.items()):
            self.changed = True  # a pack went or changed (gc): measure everything again
            return
        sizes = dict(_ENTRY.iter_unpack(body))
        if set(self.packs) - set(measured_under):
            for oid, size in list(sizes.items()):  # a new pack may hold what was loose
                if size & LOOSE and not os.path.exists(self._loose(oid)):
                    del sizes[oid]
                    self.changed = True
        self.sizes = sizes

    def _loose(self, oid: bytes) -> str:
        name = oid.hex()
        return f"{self.objects}/{name[:2]}/{name[2:]}"

    def of(self, oids: Iterable[bytes]) -> dict[bytes, int]:
        """{id: bytes on disk} of `oids`; objects the store lacks are left out."""
        wanted = [o for o in oids if o not in self.sizes]
        ask = []
        for oid in wanted:
            try:
                self.sizes[oid] = os.stat(self._loose(oid)).st_size | LOOSE
            except OSError:
                ask.append(oid)
        if wanted:
            self.changed = True
        if ask:
            self.sizes.update(_from_git(self.layout, ask))
        return self.sizes

    def size(self, oid: bytes) -> int:
        return self.sizes.get(oid, 0) & ~LOOSE

    def save(self, keep: set[bytes]) -> None:
        """Write the table back with the sizes of `keep` only (a cache: errors ignored)."""
        if not self.changed and len(self.sizes) <= 2 * len(keep) + 1024:
            return
        body = b"".join(_ENTRY.pack(o, s) for o, s in self.sizes.items() if o in keep)
        try:
            private.ensure_dir(self.path.parent)
            private.write_bytes_atomic(self.path, json.dumps(self.packs).encode() + b"\n" + body,
                                           durable=False)
        except OSError:
            pass


def _from_git(layout: Layout, oids: list[bytes]) -> dict[bytes, int]:
    """Sizes git reports for objects in packs; missing ones left out."""
    try:
        found = disk_sizes(layout, (o.hex() for o in oids))
    except StoreError:
        return {}
    return {bytes.fromhex(oid): size for oid, size in found.items()}


def object_bytes(layout: Layout) -> tuple[int, int]:
    """(bytes of objects the database holds: pack contents plus loose object files, bytes
    of every file under objects/), with loose directories scanned only when changed."""
    objects = layout.store / "objects"
    path = layout.store / CACHES / SCAN
    known = _read_scan(path)
    packs = pack_files(objects)
    stored = sum(max(0, s[0] - PACK_FRAME) for n, s in packs.items() if n.endswith(".pack"))
    files = tree_bytes(objects / "pack") + tree_bytes(objects / "info")
    fresh = {}
    try:
        with os.scandir(objects) as entries:
            for entry in entries:
                if len(entry.name) != 2 or not entry.is_dir(follow_symlinks=False):
                    continue
                mtime = entry.stat(follow_symlinks=False).st_mtime_ns
                seen = known.get(entry.name)
                if not (isinstance(seen, list) and seen[0] == mtime):
                    seen = [mtime, loose_dir_bytes(Path(entry.path))]
                fresh[entry.name] = seen
                stored += seen[1]
                files += seen[1]
    except OSError:
        pass
    if fresh != known:
        try:
            private.ensure_dir(path.parent)
            private.write_atomic(path, json.dumps(fresh), durable=False)
        except OSError:
            pass
    return stored, files


def _read_scan(path: Path) -> dict:
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def loose_dir_bytes(directory: Path) -> int:
    """Bytes of the loose object files in one fan-out directory."""
    total = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if len(entry.name) == 38:
                    try:
                        total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
    except OSError:
        pass
    return total
