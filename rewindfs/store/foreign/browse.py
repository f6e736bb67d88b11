"""The mount's door to another agent's snapshots: trees and blobs, as for the store.

The same reader as the store's (store.browse.ObjectReader): small blobs through
libgit2, big ones through a `git cat-file` of their own. That git runs on the
shared store with the agent's object folders named as alternates in its
environment, so it never reads the agent's config and writes nothing anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import pygit2

from rewindfs.store.foreign.objects import ForeignObjects
from rewindfs.store.history.files.browse import BlobSizes, ObjectReader, TreeEntry
from rewindfs.store.objects.catfile import BlobPipe
from rewindfs.store.objects.layout import Layout

T = TypeVar("T")


class ForeignBrowser(ObjectReader):
    def __init__(self, objects: ForeignObjects, layout: Layout):
        self.objects = objects
        self.layout = layout
        self._pipe = self.new_pipe()
        self._sizes = BlobSizes()
        self._packs_seen: tuple[float, ...] | None = None

    def new_pipe(self) -> BlobPipe:
        return BlobPipe(self.layout, self.objects.folders)

    def _read(self, what: str, fn: Callable[[pygit2.Repository], T]) -> T:
        return self.objects.read(what, fn)

    def tree(self, tree_id: str) -> list[TreeEntry]:
        self.objects.prefetch(tree_id)  # sizes are read next: one file each when loose
        return super().tree(tree_id)

    def exists(self, oid: str) -> bool:
        return self.objects.exists(oid)

    def notice_repack(self) -> None:
        """Reopen when the agent's gc repacked (one stat per object folder)."""
        seen = []
        for folder in self.objects.folders:
            try:
                seen.append(os.stat(folder / "pack").st_mtime)
            except OSError:
                seen.append(0.0)
        now = tuple(seen)
        if self._packs_seen is not None and now != self._packs_seen:
            self.objects.reopen()
            self._pipe.close()
        self._packs_seen = now

    def close(self) -> None:
        self.objects.stop()
        self._pipe.close()
