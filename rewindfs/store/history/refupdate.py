"""Moving a ref compare-and-swap: the one place that tells a lost race from a failure.

libgit2 moves a ref only if it still holds the value it was read with (and creates one
only if it does not exist yet), so two writers never lose each other's update; the
loser learns it from the error. pygit2 turns those errors into generic exceptions, so
they are told apart here once, by what libgit2 says: "old reference value does not
match" (it moved), an existing ref (it appeared), or "failed to lock file" (another
writer holds `<ref>.lock` right now, or a killed one left it).
"""

from __future__ import annotations

import pygit2

from rewindfs.errors import StoreError

MOVED, LOCKED = "moved", "locked"
_MOVED_TEXT = "old reference value does not match"
_LOCKED_TEXT = "failed to lock"


def swap(repo: pygit2.Repository, name: str, current: pygit2.Reference | None,
         new: pygit2.Oid | None, message: str) -> str | None:
    """Point ref `name` at `new` (delete it when None) if it still holds what `current`
    held when read (None: it must not exist). None when done; MOVED when another writer
    changed it first; LOCKED when its lock file is held. Any other failure: StoreError."""
    try:
        if current is None:
            if new is not None:
                repo.references.create(name, new, force=False)
        elif new is None:
            current.delete()
        else:
            current.set_target(new, message)
    except pygit2.AlreadyExistsError:
        return MOVED
    except (pygit2.GitError, OSError) as exc:
        said = str(exc).lower()
        if _LOCKED_TEXT in said:
            return LOCKED
        if _MOVED_TEXT in said:
            return MOVED
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise StoreError(f"could not update {name}: {detail}") from exc
    return None
