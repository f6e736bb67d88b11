"""Change stats between two trees: files changed, lines added and removed (git's numbers)."""

from __future__ import annotations

import pygit2

from rewindfs.store.history.checkpoint import Stats  # noqa: F401 - offered here too
from rewindfs.store.history.files import trees

MAX_BY_FILE = 1000   # changed files counted one by one at most; past it, one whole diff


def tree_stats(repo: pygit2.Repository, old_tree: str | None, new_tree: str,
               file_count: int | None = None) -> Stats:
    """Changes from `old_tree` (None: nothing before it) to `new_tree`."""
    if old_tree is None:
        if file_count is None:
            file_count = sum(1 for _ in trees.walk_entries(repo, new_tree))
        return Stats(file_count, 0, 0)
    found = _by_file(repo, old_tree, new_tree)
    if found is not None:
        return found
    diff = repo[old_tree].diff_to_tree(repo[new_tree])
    diff.find_similar()
    s = diff.stats
    return Stats(s.files_changed, s.insertions, s.deletions)


def _by_file(repo: pygit2.Repository, old_tree: str, new_tree: str) -> Stats | None:
    """The stats file by file (libgit2's own line counts of each pair of blobs), read only
    where the trees differ (trees.changes): libgit2's tree diff walks both trees whole
    (100 ms for one changed file of a 78,000-file tree). None where only the whole diff
    can say: a file gone and another new (a rename, which find_similar pairs), a file
    that changed its type, a submodule, more than MAX_BY_FILE files."""
    changes = trees.changes(repo, old_tree, new_tree)
    if len(changes) > MAX_BY_FILE or (any(c.old is None for c in changes)
                                      and any(c.new is None for c in changes)):
        return None
    inserted = deleted = 0
    for change in changes:
        sides = [e for e in (change.old, change.new) if e is not None]
        kinds = {trees.kind(e.mode) for e in sides}
        if trees.kind(trees.COMMIT) in kinds or len(kinds) > 1:
            return None
        old, new = (repo[e.oid] if e is not None else None for e in (change.old, change.new))
        _, plus, minus = pygit2.Patch.create_from(old, new).line_stats
        inserted, deleted = inserted + plus, deleted + minus
    return Stats(len(changes), inserted, deleted)
