"""Bytes only one project holds: blobs reachable from its kept checkpoints and no other's.

This is what removing the project would free (trees and commits aside, which are
small next to file contents). Each tree object is read once for the whole store
and each project walks only the trees it has not seen, so the cost follows the
number of distinct trees, not checkpoints x files. Sizes are on-disk sizes
(compressed, or the delta in a pack) from one `git cat-file` batch.
"""

from __future__ import annotations

import pygit2

from rewindfs.store.maintenance.inventory import History
from rewindfs.store.maintenance.sizes import disk_sizes
from rewindfs.store.objects.layout import Layout

TREE = pygit2.enums.ObjectType.TREE
BLOB = pygit2.enums.ObjectType.BLOB
SHARED = ""


class _Trees:
    """tree id -> (blob ids, subtree ids), each tree parsed once."""

    def __init__(self, repo: pygit2.Repository):
        self.repo = repo
        self.cache: dict[pygit2.Oid, tuple[list[str], list[pygit2.Oid]]] = {}

    def children(self, tree_id: pygit2.Oid) -> tuple[list[str], list[pygit2.Oid]]:
        found = self.cache.get(tree_id)
        if found is None:
            blobs, trees = [], []
            try:
                for entry in self.repo[tree_id]:
                    if entry.type == BLOB:
                        blobs.append(str(entry.id))
                    elif entry.type == TREE:
                        trees.append(entry.id)
            except KeyError:
                pass  # a missing tree (damaged store) owns nothing
            found = self.cache[tree_id] = (blobs, trees)
        return found


def exclusive_bytes(layout: Layout, repo: pygit2.Repository,
                    projects: dict[str, History]) -> dict[str, int]:
    """{h16: on-disk bytes of the blobs only that project's kept checkpoints reach}."""
    trees = _Trees(repo)
    owner: dict[str, str] = {}  # blob id -> h16, or SHARED
    for h16, hist in projects.items():
        seen: set[pygit2.Oid] = set()
        stack = []
        for commit_id in hist.kept_commits():
            try:
                stack.append(repo[commit_id].tree_id)
            except KeyError:
                continue
        while stack:
            tree_id = stack.pop()
            if tree_id in seen:
                continue
            seen.add(tree_id)
            blobs, subtrees = trees.children(tree_id)
            for blob in blobs:
                current = owner.get(blob)
                if current is None:
                    owner[blob] = h16
                elif current != h16:
                    owner[blob] = SHARED
            stack.extend(subtrees)
    sizes = disk_sizes(layout, (b for b, h in owner.items() if h != SHARED))
    totals = dict.fromkeys(projects, 0)
    for blob, size in sizes.items():
        totals[owner[blob]] += size
    return totals
