"""How big things are, measured cheaply.

The store's size is its object database: pack files plus loose objects, found
with one `scandir` of `objects/pack` and of each of the 256 loose-object
directories (no walk of history). What is *live* (reachable from a set of refs,
honouring the prune boundary) comes from git, which reads pack indexes instead
of inflating objects.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from rewindfs.store.objects import gitcli
from rewindfs.store.objects.layout import Layout

PACK_FRAME = 12 + 20  # a pack's header and trailing checksum: no object's bytes
_HEX2 = frozenset(f"{i:02x}" for i in range(256))


def tree_bytes(path: Path) -> int:
    """Apparent size of every regular file under `path` (symlinks not followed; 0 if absent)."""
    total = 0
    stack = [str(path)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(st.st_mode):
                        total += st.st_size
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
    return total


def objects_bytes(layout: Layout) -> int:
    """Bytes of the store's object database: packs (and their indexes) plus loose objects."""
    objects = layout.store / "objects"
    total = tree_bytes(objects / "pack")
    try:
        with os.scandir(objects) as entries:
            fanout = [e.path for e in entries if e.name in _HEX2]
    except OSError:
        return total
    for directory in fanout:
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def live_bytes(layout: Layout, refs: Iterable[str], shallow_file: Path | None = None) -> int:
    """On-disk bytes of the objects reachable from `refs` (history stops at the boundary).

    `shallow_file` replaces the store's `shallow` for this measurement only: how
    big the store would be with other boundaries (read-only; git writes nothing).
    """
    names = "".join(f"{ref}\n" for ref in refs)
    if not names:
        return 0
    args = ["--shallow-file", str(shallow_file)] if shallow_file is not None else []
    out = gitcli.run(layout, [*args, "rev-list", "--objects", "--disk-usage", "--stdin"],
                     stdin=names.encode())
    return int(out.strip() or 0)


def disk_sizes(layout: Layout, oids: Iterable[str]) -> dict[str, int]:
    """{oid: bytes it takes on disk (compressed, or its delta in a pack)}; missing ones left out."""
    wanted = "".join(f"{oid}\n" for oid in oids)
    if not wanted:
        return {}
    out = gitcli.run(layout, ["cat-file", "--batch-check=%(objectname) %(objectsize:disk)"],
                     stdin=wanted.encode())
    sizes: dict[str, int] = {}
    for line in out.decode().splitlines():
        oid, _, size = line.partition(" ")
        if size.isdigit():
            sizes[oid] = int(size)
    return sizes
