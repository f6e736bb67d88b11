"""Real permission bits of files and directories, kept beside a checkpoint.

A git tree records 100644 or 100755 for a file and nothing for a directory, so a
0600 `secret.txt` or a 0700 directory cannot come back as it was from the tree
alone. A restore records, in its pre-rollback snapshot's note (store.history.metadata.notes, key
"modes"), the mode of every file it overwrites or deletes and of every directory
above those, so undoing the restore brings them back exactly. Hermes and the
mount see an ordinary checkpoint (notes are outside the file tree).

    "modes": {"<surrogate-escaped path>": <st_mode: file type and permission bits>}
"""

from __future__ import annotations

import os

import pygit2

from rewindfs.store.history.metadata import notes

KEY = "modes"


def read(repo: pygit2.Repository, h16: str, commit: str) -> dict[bytes, int]:
    """The recorded modes of `commit` (empty when it has none)."""
    doc = notes.read(repo, h16, commit) or {}
    found = doc.get(KEY)
    if not isinstance(found, dict):
        return {}
    return {os.fsencode(path): mode for path, mode in found.items()
            if isinstance(path, str) and isinstance(mode, int) and not isinstance(mode, bool)}


def record(repo: pygit2.Repository, h16: str, commit: str, modes: dict[bytes, int]) -> None:
    """Add `modes` to `commit`'s note (other keys of the note are kept). The caller holds
    the project lock."""
    if not modes:
        return
    doc = dict(notes.read(repo, h16, commit) or {})
    merged = doc.get(KEY) if isinstance(doc.get(KEY), dict) else {}
    merged = {**merged, **{os.fsdecode(path): mode for path, mode in modes.items()}}
    doc[KEY] = merged
    notes.write(repo, h16, commit, doc)
