"""A project's directory: its checkpoints by stable name; `1 2 3 ...`, `latest` and each
label (`rewind checkpoint --label`) are links pointing at them.

Numbers are symlinks rather than directories so that a shell that entered
`3/` sits in the checkpoint itself: when a new checkpoint arrives `3` names
another one, but the shell's directory does not change under it.
The list is re-read from the store when older than the refresh interval, so new
and pruned checkpoints show within about a second.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rewindfs.fs.inodes import inode_for
from rewindfs.fs.locate import XATTR_WORKDIR
from rewindfs.fs.nodes.changing import ChangingDir
from rewindfs.fs.nodes.checkpoint import CheckpointDir, stable_name
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.link import PointerLink
from rewindfs.fs.nodes.node import DIR_MODE, Attributes, Node
from rewindfs.store.history import Checkpoint

LATEST = b"latest"


@dataclass
class _Listing:
    entries: list[tuple[bytes, Node]] = field(default_factory=list)
    by_name: dict[bytes, Node] = field(default_factory=dict)
    newest_ns: int = 0


class ProjectDir(ChangingDir):
    has_pointers = True  # Model.resolve follows `1`, `latest` and labels here
    keeps_listing_on_error = False  # as fs.nodes.listed's: the store is ours

    def __init__(self, context: Context, h16: str, workdir: Path | None):
        super().__init__(context, inode_for("project", h16))
        self.h16 = h16
        self.workdir = workdir
        self._dirs: dict[str, CheckpointDir] = {}  # by commit: nodes outlive renumbering
        self._newest_ns = 0
        self._watched: object = None

    def attributes(self) -> Attributes:
        self._refresh()
        # The listing's last change (a pruned checkpoint or a moved label too), so a
        # kernel that cached the listing sees the directory as modified.
        return self._attrs(DIR_MODE, 0, max(self._newest_ns, self._changed_ns)
                           or self.context.started_ns)

    def xattrs(self) -> dict[bytes, bytes]:
        return {XATTR_WORKDIR: os.fsencode(str(self.workdir))} if self.workdir else {}

    def checkpoint_dir(self, checkpoint: Checkpoint) -> CheckpointDir:
        node = self._dirs.get(checkpoint.id)
        if node is None:
            parent = checkpoint.parent_id
            previous = (lambda: self._dirs.get(parent)) if parent else None
            node = self._dirs[checkpoint.id] = CheckpointDir(self.context, self.h16, checkpoint,
                                                             previous)
        else:
            node.update(checkpoint)
        return node

    def refresh(self, signature: object = None) -> None:
        """Re-read the checkpoint list now, unless `signature` (what the list is made
        of, see StoreBrowser.signatures) is the one last seen."""
        if signature is not None and signature == self._watched:
            return
        super().refresh()
        self._watched = signature

    def _read(self) -> list[tuple[bytes, Node]]:
        history = self.context.browser.checkpoints(self.h16)
        # Build into the full set of nodes first: a checkpoint's predecessor must be
        # findable while the new listing is made.
        listing = self._build(history)
        self._dirs = {cp.id: self._dirs[cp.id] for cp in history if cp.id in self._dirs}
        self._newest_ns = listing.newest_ns
        return listing.entries

    def _build(self, history: list[Checkpoint]) -> _Listing:
        listing = _Listing()
        names: list[bytes] = []
        for cp in history:
            name = stable_name(cp).encode()
            if name in listing.by_name:  # same second and same short hash: use more hash
                name = f"{name.decode()}{cp.id[8:16]}".encode()
            node = self.checkpoint_dir(cp)
            listing.by_name[name] = node
            listing.entries.append((name, node))
            names.append(name)
        if history:
            listing.newest_ns = history[0].time * 1_000_000_000
            # Numbers are history.checkpoints()'s, so they agree with `rewind list`:
            # pre-rollback snapshots (number 0) get no number, and `latest` is 1. Past
            # a break in the history nothing is numbered, and `latest` is not guessed.
            numbered = [(str(cp.number).encode(), target) for cp, target
                        in zip(history, names, strict=True) if cp.number]
            pointers = list(numbered)
            if numbered or getattr(history, "broken", None) is None:
                pointers.append((LATEST, numbered[0][1] if numbered else names[0]))
            pointers += [(label.encode(), target) for cp, target
                         in zip(history, names, strict=True) for label in cp.labels]
            for name, target in pointers:
                if name in listing.by_name:  # a label spelled like a stable name: skip it
                    continue
                link = PointerLink(self.context, self.h16, name, target, listing.newest_ns)
                listing.by_name[name] = link
                listing.entries.append((name, link))
        return listing
