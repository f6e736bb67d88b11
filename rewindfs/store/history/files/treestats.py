"""Change stats between two trees: files changed, lines added and removed (git's numbers)."""

from __future__ import annotations

import pygit2

from rewindfs.store.history.checkpoint import Stats  # noqa: F401 - offered here too
from rewindfs.store.history.files import trees


def tree_stats(repo: pygit2.Repository, old_tree: str | None, new_tree: str,
               file_count: int | None = None) -> Stats:
    """Changes from `old_tree` (None: nothing before it) to `new_tree`."""
    if old_tree is None:
        if file_count is None:
            file_count = sum(1 for _ in trees.walk_entries(repo, new_tree))
        return Stats(file_count, 0, 0)
    diff = repo[old_tree].diff_to_tree(repo[new_tree])
    diff.find_similar()
    s = diff.stats
    return Stats(s.files_changed, s.insertions, s.deletions)
