"""Objects, refs and the prune boundary read in Python, without libgit2: for the CLI's
quick read paths (`rewind list`, `rewind cat`), whose start-up cannot afford importing
pygit2 (about twice Python's own start-up).

Loose objects (verified by their hash), packed ones (version-2 indexes; ofs- and
ref-deltas resolved), loose and packed refs. It only ever answers what it is sure of:
anything it does not expect (an alternates file, a damaged or truncated object, an
object it cannot find, an unknown ref format) raises `Unsure`, and the caller takes the
libgit2 path, which reads everything and names what is damaged.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from pathlib import Path

from rewindfs.store.objects import loose, packs
from rewindfs.store.objects.indexfile import offset_varint
from rewindfs.store.objects.layout import LABELS_PREFIX, Layout

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
OFS_DELTA, REF_DELTA = 6, 7
MAX_DELTA_DEPTH = 100  # git's default pack.depth is 50


class Unsure(Exception):
    """Not answerable here with certainty: take the libgit2 path."""


class RawOdb:
    """The store's objects, read-only. One per command: packs are opened on first use."""

    def __init__(self, store: Path):
        self.store = store
        self.objects = store / "objects"
        if (self.objects / "info" / "alternates").exists():
            raise Unsure("the store borrows objects from elsewhere")
        self._packs: list[_Pack] | None = None

    # -- objects -------------------------------------------------------------------

    def read(self, oid: str) -> tuple[int, bytes]:
        """(type, body) of object `oid` (40 hex digits)."""
        try:
            return loose.read_verified(loose.path_of(self.objects, oid), oid)
        except FileNotFoundError:
            pass
        except Exception as exc:  # StoreDamaged, OSError: libgit2's path says which
            raise Unsure(str(exc)) from None
        raw = bytes.fromhex(oid)
        for pack in self.packs():
            at = pack.offset_of(raw)
            if at is not None:
                return pack.read_at(at, self, 0)
        raise Unsure(f"object {oid} not found")

    def has(self, oid: str) -> bool:
        """Whether object `oid` is stored (loose or packed; not read)."""
        if os.path.exists(loose.path_of(self.objects, oid)):
            return True
        raw = bytes.fromhex(oid)
        return any(pack.offset_of(raw) is not None for pack in self.packs())

    def read_kind(self, oid: str, kind: int) -> bytes:
        found, body = self.read(oid)
        if found != kind:
            raise Unsure(f"object {oid} is a {found}, not a {kind}")
        return body

    def packs(self) -> list[_Pack]:
        if self._packs is None:
            self._packs = [_Pack(idx) for idx in packs.indexes(self.objects)]
        return self._packs

    # -- refs ----------------------------------------------------------------------

    def ref(self, name: str) -> str | None:
        """The object id a ref names (loose, else packed-refs), or None when it is absent."""
        try:
            with open(self.store / name, "rb") as fh:
                value = fh.read(200).strip()
        except FileNotFoundError:
            return self._packed_refs().get(name)
        except (NotADirectoryError, IsADirectoryError) as exc:
            raise Unsure(f"ref {name}: {exc}") from None
        except OSError as exc:
            raise Unsure(f"ref {name}: {exc}") from None
        return _object_id(value, name)

    def refs_under(self, prefix: str) -> dict[str, str]:
        """Every ref whose name starts with `prefix` (ending in /) -> its object id."""
        found = {name: oid for name, oid in self._packed_refs().items()
                 if name.startswith(prefix)}
        top = self.store / prefix
        for dirpath, _dirs, files in os.walk(top):
            for file in files:
                path = Path(dirpath) / file
                if file.endswith(".lock"):
                    continue
                name = path.relative_to(self.store).as_posix()
                try:
                    found[name] = _object_id(path.read_bytes().strip(), name)
                except OSError as exc:
                    raise Unsure(f"ref {name}: {exc}") from None
        return found

    def _packed_refs(self) -> dict[str, str]:
        try:
            raw = (self.store / "packed-refs").read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise Unsure(f"packed-refs: {exc}") from None
        out = {}
        for line in raw.splitlines():
            if not line or line.startswith((b"#", b"^")):
                continue
            oid, _, name = line.partition(b" ")
            out[name.decode("utf-8", "surrogateescape")] = _object_id(oid, "packed-refs")
        return out

    def boundaries(self) -> frozenset[str]:
        """The prune boundary (`shallow`), as store.history.shallow reads it."""
        try:
            text = (self.store / "shallow").read_text()
        except FileNotFoundError:
            return frozenset()
        except (OSError, UnicodeDecodeError) as exc:
            raise Unsure(f"shallow: {exc}") from None
        return frozenset(line.strip() for line in text.splitlines() if line.strip())

    def labels(self, h16: str) -> dict[str, list[str]]:
        """commit id -> the labels naming it (store.history.labels.labels_by_commit)."""
        prefix = f"{LABELS_PREFIX}{h16}/"
        out: dict[str, list[str]] = {}
        for name, oid in self.refs_under(prefix).items():
            out.setdefault(oid, []).append(name[len(prefix):])
        return out


def open_store(layout: Layout) -> RawOdb | None:
    """The store's reader, or None when there is no store yet."""
    if not (layout.store / "HEAD").exists():
        return None
    return RawOdb(layout.store)


def _object_id(value: bytes, where: str) -> str:
    text = value.decode("ascii", "replace")
    if len(text) != 40 or any(c not in "0123456789abcdef" for c in text):
        raise Unsure(f"{where}: not an object id ({text[:60]!r})")  # a symref, say
    return text


class _Pack:
    def __init__(self, idx: Path):
        self.idx_path = idx
        self.pack_path = idx.with_suffix(".pack")
        self._idx: bytes | None = None
        self._data: mmap.mmap | None = None

    def _index(self) -> bytes:
        if self._idx is None:
            try:
                data = self.idx_path.read_bytes()
            except OSError as exc:
                raise Unsure(f"{self.idx_path}: {exc}") from None
            if len(data) < packs.FANOUT or data[:8] != packs.IDX_MAGIC + b"\0\0\0\2":
                raise Unsure(f"{self.idx_path}: not a version-2 pack index")
            self._idx = data
        return self._idx

    def offset_of(self, raw: bytes) -> int | None:
        data = self._index()
        count = struct.unpack_from(">I", data, packs.FANOUT - 4)[0]
        first = raw[0]
        lo = struct.unpack_from(">I", data, 8 + 4 * (first - 1))[0] if first else 0
        hi = struct.unpack_from(">I", data, 8 + 4 * first)[0]
        names = packs.FANOUT
        while lo < hi:
            mid = (lo + hi) // 2
            at = names + mid * packs.HASH
            name = data[at: at + packs.HASH]
            if name == raw:
                break
            if name < raw:
                lo = mid + 1
            else:
                hi = mid
        else:
            return None
        offsets = names + count * (packs.HASH + 4)
        try:
            word = struct.unpack_from(">I", data, offsets + 4 * mid)[0]
            if word & 0x80000000:
                large = offsets + 4 * count + 8 * (word & 0x7FFFFFFF)
                word = struct.unpack_from(">Q", data, large)[0]
        except struct.error:
            raise Unsure(f"{self.idx_path}: truncated") from None
        return word

    def _pack(self) -> mmap.mmap:
        if self._data is None:
            try:
                with open(self.pack_path, "rb") as fh:
                    self._data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                raise Unsure(f"{self.pack_path}: {exc}") from None
        return self._data

    def read_at(self, start: int, odb: RawOdb, depth: int) -> tuple[int, bytes]:
        """(type, body) of the object whose entry starts at `start`, deltas resolved."""
        if depth > MAX_DELTA_DEPTH:
            raise Unsure(f"{self.pack_path}: delta chain too deep")
        data = self._pack()
        try:
            kind, size, at = _entry_header(data, start)
            if kind == OFS_DELTA:
                back, at = offset_varint(data, at)
                base_kind, base = self.read_at(start - back, odb, depth + 1)
                return base_kind, _apply_delta(base, self._inflate(data, at, size))
            if kind == REF_DELTA:
                base_kind, base = odb.read(data[at: at + packs.HASH].hex())
                return base_kind, _apply_delta(base, self._inflate(data, at + packs.HASH, size))
            if kind not in (COMMIT, TREE, BLOB, TAG):
                raise Unsure(f"{self.pack_path}: unknown object type {kind}")
            return kind, self._inflate(data, at, size)
        except (IndexError, ValueError, struct.error, zlib.error) as exc:
            raise Unsure(f"{self.pack_path}: {exc}") from None

    def _inflate(self, data: mmap.mmap, at: int, size: int) -> bytes:
        """`size` bytes inflated from the zlib stream at `at` (its length is not recorded)."""
        d = zlib.decompressobj()
        out = []
        chunk = size + 256  # deflate rarely grows data by more than a few bytes per block
        while not d.eof:
            if at >= len(data):
                raise Unsure(f"{self.pack_path}: truncated object")
            out.append(d.decompress(data[at: at + chunk]))
            at += chunk
            chunk = max(chunk, 65536)
        body = b"".join(out)
        if len(body) != size:
            raise Unsure(f"{self.pack_path}: object of {len(body)} bytes, {size} declared")
        return body


def _entry_header(data: mmap.mmap, at: int) -> tuple[int, int, int]:
    """(type, inflated size, offset after the header) of a pack entry."""
    c = data[at]
    kind, size, shift = (c >> 4) & 7, c & 15, 4
    while c & 0x80:
        at += 1
        c = data[at]
        size |= (c & 0x7F) << shift
        shift += 7
    return kind, size, at + 1


def _varint(delta: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        c = delta[at]
        at += 1
        value |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return value, at


def _apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format: sizes, then copies from the base and inserted bytes."""
    source, at = _varint(delta, 0)
    target, at = _varint(delta, at)
    if source != len(base):
        raise Unsure("delta against a base of another size")
    out = []
    end = len(delta)
    while at < end:
        op = delta[at]
        at += 1
        if op & 0x80:
            offset = length = 0
            for bit in range(4):
                if op & (1 << bit):
                    offset |= delta[at] << (8 * bit)
                    at += 1
            for bit in range(3):
                if op & (0x10 << bit):
                    length |= delta[at] << (8 * bit)
                    at += 1
            length = length or 0x10000
            if offset + length > source:
                raise Unsure("delta copies past its base")
            out.append(base[offset: offset + length])
        elif op:
            out.append(delta[at: at + op])
            at += op
        else:
            raise Unsure("delta holds a reserved instruction")
    body = b"".join(out)
    if len(body) != target:
        raise Unsure("delta result of the wrong size")
    return body
