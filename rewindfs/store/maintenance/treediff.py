"""Objects one checkpoint's tree holds that the next one's does not.

That is what dropping the oldest kept checkpoint can free (its own history is
already beyond the boundary). Identical subtrees are skipped by id, so the cost
follows the size of the change, not of the tree. Objects that also live elsewhere
(another project, a later checkpoint, a moved file) are counted too: the result
is an upper bound, which errs towards dropping too little, never too much.
"""

from __future__ import annotations

import pygit2

TREE = pygit2.enums.ObjectType.TREE
BLOB = pygit2.enums.ObjectType.BLOB


def only_in(repo: pygit2.Repository, old: pygit2.Oid, new: pygit2.Oid | None) -> set[str]:
    """Ids of the trees and blobs under tree `old` that are not at the same path in `new`."""
    found: set[str] = set()
    stack: list[tuple[pygit2.Oid, pygit2.Oid | None]] = [(old, new)]
    while stack:
        a, b = stack.pop()
        if a == b:
            continue
        found.add(str(a))
        other = {e.raw_name: e for e in repo[b]} if b is not None else {}
        for entry in repo[a]:
            match = other.get(entry.raw_name)
            if match is not None and match.id == entry.id:
                continue
            if entry.type == TREE:
                stack.append((entry.id, match.id if match is not None and match.type == TREE
                              else None))
            elif entry.type == BLOB:
                found.add(str(entry.id))
    return found
