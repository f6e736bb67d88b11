"""The objects a git index file names, read in Python: each entry's blob, and the trees of
its cache-tree extension (what `git write-tree` remembered).

git's gc keeps both (`rev-list --indexed-objects`), so `rewind status` counts them as
live; libgit2 (and pygit2) do not expose the cache tree. Formats 2, 3 and 4 (path
prefix compression) are read; anything unexpected raises ValueError. Also whether a
file could be an index at all, before libgit2 is given it (`could_hold_its_entries`).
"""

from __future__ import annotations

import os
import struct

import pygit2

SIGNATURE = b"DIRC"
ENTRY_FIXED = 62  # stat data (40), object id (20), flags (2)
EXTENDED = 0x4000


def index_objects(data: bytes) -> tuple[list[tuple[bytes, str]], list[tuple[bytes, str]]]:
    """([(path, blob id)], [(directory path, tree id)]) of an index file's bytes; the
    cache tree's root is the directory b"" (trees it marks invalid are left out)."""
    if len(data) < 32 or data[:4] != SIGNATURE:
        raise ValueError("not a git index")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version}")
    at, entries, previous = 12, [], b""
    end = len(data) - 20
    for _ in range(count):
        oid = data[at + 40:at + 60].hex()
        (flags,) = struct.unpack(">H", data[at + 60:at + 62])
        start = at + ENTRY_FIXED + (2 if version >= 3 and flags & EXTENDED else 0)
        if version == 4:
            strip, start = offset_varint(data, start)
            stop = data.index(b"\0", start)
            path = previous[:len(previous) - strip] + data[start:stop]
            at = stop + 1
        else:
            stop = data.index(b"\0", start)
            path = data[start:stop]
            at += (stop - at + 8) & ~7  # NUL-padded to a multiple of 8
        if at > end:
            raise ValueError("index entries run past the end")
        entries.append((path, oid))
        previous = path
    return entries, _cache_tree(data, at, end)


def not_in_tip(repo: pygit2.Repository, data: bytes, tip: str | None
               ) -> tuple[list[str], list[str]]:
    """(blobs, trees) an index file's bytes name that the tree of commit `tip` (of `repo`)
    does not hold at the same path: staged and never committed, or left by a commit gone
    since. ValueError when the bytes are no index."""
    entries, trees = index_objects(data)
    try:
        root = repo[tip].peel(pygit2.Tree) if tip else None
    except (KeyError, ValueError, pygit2.GitError):
        root = None
    found: tuple[set[str], set[str]] = (set(), set())
    for kind, pairs in enumerate((entries, trees)):
        for path, oid in pairs:
            try:
                held = str(root.id) if root is not None and not path else \
                    str(root[path.decode("utf-8", "surrogateescape")].id) \
                    if root is not None else None
            except (KeyError, ValueError, UnicodeError):
                held = None
            if held != oid:
                found[kind].add(oid)
    return sorted(found[0]), sorted(found[1])


def could_hold_its_entries(path: os.PathLike | str) -> bool:
    """Whether the index file at `path` is long enough for the entries its header counts
    (each takes at least ENTRY_FIXED bytes); True when there is no file.

    libgit2 sizes its tables by that count before it reads a single entry: a damaged
    header counting 1.7 billion entries made it reserve 32.5 GiB, which it keeps until
    the repository is closed (fork fails in that process meanwhile: the kernel will
    not copy a mapping larger than memory). Such a file is damaged, and is never given
    to libgit2."""
    try:
        with open(path, "rb") as f:
            head, size = f.read(12), os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return True
    if len(head) < 12 or head[:4] != SIGNATURE:
        return False
    (count,) = struct.unpack(">I", head[8:12])
    return count * ENTRY_FIXED <= size - 12 - 20  # the header, the entries, the checksum


def offset_varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset varint (index v4's, and a pack's ofs-delta distance back to its base),
    and the offset after it."""
    byte = data[at]
    value = byte & 0x7F
    while byte & 0x80:
        at += 1
        byte = data[at]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at + 1


def _cache_tree(data: bytes, at: int, end: int) -> list[tuple[bytes, str]]:
    while at + 8 <= end:
        name, (size,) = data[at:at + 4], struct.unpack(">I", data[at + 4:at + 8])
        if name == b"TREE":
            return _trees(data[at + 8:at + 8 + size])
        at += 8 + size
    return []


def _trees(ext: bytes) -> list[tuple[bytes, str]]:
    """The cache tree, depth first: path NUL entry-count SP subtrees LF [id]."""
    out: list[tuple[bytes, str]] = []
    stack: list[tuple[bytes, int]] = []  # (directory, subtrees still to read)
    at = 0
    while at < len(ext):
        stop = ext.index(b"\0", at)
        name = ext[at:stop]
        line_end = ext.index(b"\n", stop)
        entry_count, subtrees = (int(n) for n in ext[stop + 1:line_end].split(b" "))
        at = line_end + 1
        while stack and stack[-1][1] == 0:
            stack.pop()
        if stack:
            parent, left = stack[-1]
            stack[-1] = (parent, left - 1)
            path = parent + b"/" + name if parent else name
        else:
            path = name
        if entry_count >= 0:
            out.append((path, ext[at:at + 20].hex()))
            at += 20
        stack.append((path, subtrees))
    return out
