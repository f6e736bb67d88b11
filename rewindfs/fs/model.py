"""The browsable model of a store: build it, then walk it like a directory tree.

    model = Model(Layout.for_home())
    model.resolve("myproject/3/src/app.py").data()

This is the whole filesystem without a kernel; `operations` serves it over FUSE.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from rewindfs.errors import NotFound
from rewindfs.fs.blobs import DEFAULT_SPOOL
from rewindfs.fs.nodes.context import DEFAULT_BLOB_CACHE, REFRESH_INTERVAL, Context
from rewindfs.fs.nodes.node import Directory, Node, Symlink
from rewindfs.fs.nodes.root import RootDir
from rewindfs.store.history import StoreBrowser
from rewindfs.store.objects import Layout

MAX_POINTER_HOPS = 8


class Model:
    def __init__(self, layout: Layout, *, only_project: str | None = None,
                 only_workdir: Path | None = None,
                 blob_cache_bytes: int = DEFAULT_BLOB_CACHE,
                 refresh_interval: float = REFRESH_INTERVAL,
                 clock: Callable[[], float] = time.monotonic, share_modes: bool = True,
                 spool_bytes: int = DEFAULT_SPOOL):
        self.context = Context(StoreBrowser(layout), blob_cache_bytes=blob_cache_bytes,
                               refresh_interval=refresh_interval, only_project=only_project,
                               only_workdir=only_workdir,
                               clock=clock, share_modes=share_modes, spool_bytes=spool_bytes)
        self.root = RootDir(self.context)

    def close(self) -> None:
        """Let go of what reading the store holds open (git processes)."""
        self.context.close()

    def resolve(self, path: str | bytes) -> Node:
        """The node at `path` (relative to the mount). Links the mount made (`latest`,
        numbers) are followed where a directory is needed (as with a trailing `/`);
        stored symlinks are not."""
        raw = os.fsencode(path)
        parts = [p for p in raw.split(b"/") if p and p != b"."]
        node: Node = self.root
        parent: Directory | None = None
        for index, part in enumerate(parts):
            if not isinstance(node, Directory):
                raise NotFound(f"{path!r}: not a directory")
            parent, child = node, node.lookup(part)
            hops = 0
            more = index + 1 < len(parts) or raw.endswith(b"/")
            while more and getattr(parent, "has_pointers", False) and isinstance(child, Symlink):
                hops += 1
                if hops > MAX_POINTER_HOPS:
                    raise NotFound(f"{path!r}: too many links")
                child = _follow(parent, child.target())
            if child is None:
                raise NotFound(f"{path!r}: no such file or directory")
            node = child
        return node


def _follow(directory: Directory, target: bytes) -> Node | None:
    """The node a mount link (`3`, `latest`) names, relative to its directory."""
    node: Node | None = directory
    for part in target.split(b"/"):
        if not isinstance(node, Directory):
            return None
        node = node.lookup(part)
    return node
