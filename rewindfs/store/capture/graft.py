"""The next tree from a previous capture's tree and the paths changed since.

A watch (rewindfs.resident) knows which paths of a project changed since a capture it
trusts (`Since`). The capture (workdir) then looks at those paths only: it runs its
usual walk over a small in-memory index seeded with the previous tree's entries at and
below each changed path (`seed`), and `graft` puts the tree that walk made in place of
those paths in the previous tree. Every other directory keeps its previous tree object,
unread. A changed path is a file, a link or a whole directory (one created, moved in
or out, or whose permissions changed): what is below it is walked as a first capture
would walk it.

Trees are written as git writes them (packwrite.tree_content: entries in git's order,
a directory sorting as its name plus "/"); names are bytes throughout, so names that are
not UTF-8 survive.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import pygit2

from rewindfs.store.capture.walk import Limits
from rewindfs.store.objects.packwrite import tree_content

TREE_MODE = 0o40000
# Files whose edit changes what the capture takes of other paths: only a walk can tell.
IGNORE_FILES = frozenset({b".gitignore", b".rewindignore"})
_TREE = pygit2.enums.ObjectType.TREE
_EMPTY_FIELDS = (0,) * 10


@dataclass(frozen=True)
class Since:
    """What a watch knows of a project: a capture it trusts (its tree, how many files
    it holds, what it left out, the limits it was taken with) and every path changed
    since that capture began (relative, bytes). `token` is the watch's own, handed
    back with the capture this one makes (workdir.capture's `report`)."""

    tree: bytes
    count: int
    limits: Limits
    paths: tuple[bytes, ...]
    skipped: dict[str, list[str]] = field(default_factory=dict)
    token: object = None


def scopes(paths: Iterable[bytes]) -> list[bytes]:
    """`paths` sorted, without those below another one of them (a directory's walk
    covers everything below it)."""
    out: list[bytes] = []
    for path in sorted(set(p.strip(b"/") for p in paths)):
        if not path:
            return [b""]   # the whole tree: not a graft at all (the caller walks it)
        if out and (path == out[-1] or path.startswith(out[-1] + b"/")):
            continue
        out.append(path)
    return out


def nested_tops(root: bytes, scoped: list[bytes]) -> list[bytes]:
    """Each of `scoped` that lies inside a nested repository (a directory of the project
    holding `.git`) replaced by that repository's top: a walk takes a nested repository
    whole (walk.add_nested), so a graft must look at it whole too."""
    out = []
    for path in scoped:
        parts = path.split(b"/")[:-1]
        for i in range(1, len(parts) + 1):
            top = b"/".join(parts[:i])
            if os.path.lexists(root + b"/" + top + b"/.git"):
                path = top
                break
        out.append(path)
    return out


def under(path: bytes, scoped: set[bytes]) -> bool:
    """Whether `path` is one of `scoped` or below one of them."""
    while path:
        if path in scoped:
            return True
        path = path.rpartition(b"/")[0]
    return False


class Trees:
    """Tree objects read by raw oid, each at most once per capture: {name: (mode, oid)}."""

    def __init__(self, repo: pygit2.Repository):
        self.repo = repo
        self.read: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}

    def entries(self, oid: bytes) -> dict[bytes, tuple[int, bytes]]:
        found = self.read.get(oid)
        if found is None:
            tree = self.repo[pygit2.Oid(raw=oid)]
            if not isinstance(tree, pygit2.Tree):
                raise ValueError(f"{oid.hex()} is not a tree")
            found = {e.raw_name: (e.filemode, e.id.raw) for e in tree}
            self.read[oid] = found
        return found

    def at(self, root: bytes, path: bytes) -> tuple[int, bytes] | None:
        """(mode, oid) of `path` in the tree `root`, None when it holds no such entry."""
        mode, oid = TREE_MODE, root
        for name in path.split(b"/"):
            if mode != TREE_MODE:
                return None
            hit = self.entries(oid).get(name)
            if hit is None:
                return None
            mode, oid = hit
        return mode, oid

    def files(self, mode: int, oid: bytes, prefix: bytes) -> Iterable[tuple[bytes, int, bytes]]:
        """Every blob, link and gitlink at or below an entry, as (path, mode, oid)."""
        if mode != TREE_MODE:
            yield prefix, mode, oid
            return
        for name, (sub_mode, sub_oid) in self.entries(oid).items():
            yield from self.files(sub_mode, sub_oid, prefix + b"/" + name)


def seed(trees: Trees, base: bytes, index: pygit2.Index, scoped: list[bytes]) -> int:
    """Put `base`'s entries at and below each of `scoped` into `index`, with no stat data
    (the walk reads each again); returns how many."""
    from rewindfs.store.capture.storing import add_entry

    count = 0
    for path in scoped:
        hit = trees.at(base, path)
        if hit is None:
            continue
        for rel, mode, oid in trees.files(hit[0], hit[1], path):
            add_entry(index, rel, (*_EMPTY_FIELDS[:6], mode, 0, 0, 0), oid)
            count += 1
    return count


def graft(trees: Trees, base: bytes, part: bytes, scoped: list[bytes]) -> bytes:
    """The tree `base` with each of `scoped` replaced by what the tree `part` holds there
    (removed where `part` holds nothing); returns its raw oid."""
    updates: dict[bytes, tuple[int, bytes] | None] = {p: trees.at(part, p) for p in scoped}
    return _apply(trees, base, updates) or _write(trees.repo, {})


def _apply(trees: Trees, oid: bytes | None, updates: dict[bytes, tuple[int, bytes] | None]
           ) -> bytes | None:
    """The tree `oid` (None: an empty one) with `updates` (relative paths) applied; None
    when nothing is left in it (git writes no empty trees below the root)."""
    entries = dict(trees.entries(oid)) if oid is not None else {}
    below: dict[bytes, dict[bytes, tuple[int, bytes] | None]] = {}
    for path, value in updates.items():
        name, _, rest = path.partition(b"/")
        if rest:
            below.setdefault(name, {})[rest] = value
        elif value is None:
            entries.pop(name, None)
        else:
            entries[name] = value
    for name, sub in below.items():
        old = entries.get(name)
        new = _apply(trees, old[1] if old is not None and old[0] == TREE_MODE else None, sub)
        if new is None:
            if old is not None and old[0] == TREE_MODE:
                del entries[name]
        else:
            entries[name] = (TREE_MODE, new)
    if not entries:
        return None
    if oid is not None and entries == trees.entries(oid):
        return oid
    return _write(trees.repo, entries)


def _write(repo: pygit2.Repository, entries: dict[bytes, tuple[int, bytes]]) -> bytes:
    content = tree_content((mode, name, oid) for name, (mode, oid) in entries.items())
    return repo.odb.write(_TREE, content).raw
