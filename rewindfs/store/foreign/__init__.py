"""Other agents' snapshot repositories (Kilo Code, OpenCode): read, never written; their
trees copied into the store so the agents' own gc cannot lose them.

May import: objects, history.

    objects     a project's snapshot objects, opened as an object database only
    places      snapshot git dirs, and which agent project a directory is
    browse      the mount's reader of them (as history.browse is for the store)
    copy        their trees into the store: only what it lacks, re-hashed, whole
    imports     kept as labelled checkpoints of a project (`rewind import`)
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.foreign import places
    from rewindfs.store.foreign.browse import ForeignBrowser
    from rewindfs.store.foreign.copy import Copied, copy_trees
    from rewindfs.store.foreign.imports import Imported, Snapshot, keep
    from rewindfs.store.foreign.objects import ForeignObjects
    from rewindfs.store.foreign.places import same_path

_HERE = "rewindfs.store.foreign"
__all__, __getattr__, __dir__ = face(_HERE, {
    "ForeignBrowser": f"{_HERE}.browse",
    "Copied": f"{_HERE}.copy",
    "copy_trees": f"{_HERE}.copy",
    "Imported": f"{_HERE}.imports",
    "Snapshot": f"{_HERE}.imports",
    "keep": f"{_HERE}.imports",
    "ForeignObjects": f"{_HERE}.objects",
    "same_path": f"{_HERE}.places",
}, modules=("places",))
