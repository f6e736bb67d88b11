"""The shared checkpoint store: the only package that talks to git.

Seven rooms, each importing only the rooms before it (each room's docstring says what it
owns and what it may import; tests/test_layout_rules.py holds them to it):

    objects/      the store on disk: layout, opening it, private files, locks, the pack
                  writer, the stock-pygit2 guard, damage naming, `rewind check` and the
                  Python readers that name damage (verify/), healing, the cat-file pipe
    capture/      a working directory read truthfully into a tree: the walk, reading
                  a file, the two-core split, deep directories, secrets, Ctrl-C
    history/      checkpoints and what hangs off them: taking one, listing and numbering
                  (with the history records: records/), resolving references, labels,
                  what a checkpoint holds (files/: diff, log, grep, the mount's read
                  side), what agents record beside it (metadata/), prune and delete,
                  the projects registry
    projectgit/   the project's own `.git`: its state recorded beside a checkpoint (refs,
                  HEAD, index, config, hooks; objects by git's fetch) and given back
    maintenance/  caps, retention, quarantine, gc, legacy repositories, status, clear
    foreign/      other agents' snapshot repositories, opened read-only, copied in
    remote/       push and fetch of checkpoints through any git remote

Code outside the store imports from this face or a room's face
(`rewindfs.store.history`, ...), never from a module inside a room. The faces are
lazy: importing one imports nothing until a name is used.

Public surface:
    Layout, Store, Project          where things live; opening the store
    take, SnapshotResult            taking a checkpoint
    Checkpoint, checkpoints, resolve, stats, set_label    history
    diff_between, working_tree_tree differences
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.capture.walk import Limits
    from rewindfs.store.history.chain import checkpoints
    from rewindfs.store.history.checkpoint import Checkpoint, SnapshotResult, Stats
    from rewindfs.store.history.files.changestats import stats
    from rewindfs.store.history.files.diff import DiffResult, working_tree_tree
    from rewindfs.store.history.files.diff import between as diff_between
    from rewindfs.store.history.labels import set_label, validate_label
    from rewindfs.store.history.references import resolve
    from rewindfs.store.history.snapshot import take
    from rewindfs.store.objects.layout import Layout, normalize_workdir, project_hash
    from rewindfs.store.objects.repo import Project, Store

_HERE = "rewindfs.store"
__all__, __getattr__, __dir__ = face(_HERE, {
    "Limits": f"{_HERE}.capture.walk",
    "Checkpoint": f"{_HERE}.history.checkpoint",
    "checkpoints": f"{_HERE}.history.chain",
    "Stats": f"{_HERE}.history.checkpoint",
    "stats": f"{_HERE}.history.files.changestats",
    "DiffResult": f"{_HERE}.history.files.diff",
    "working_tree_tree": f"{_HERE}.history.files.diff",
    "diff_between": f"{_HERE}.history.files.diff:between",
    "set_label": f"{_HERE}.history.labels",
    "validate_label": f"{_HERE}.history.labels",
    "resolve": f"{_HERE}.history.references",
    "SnapshotResult": f"{_HERE}.history.checkpoint",
    "take": f"{_HERE}.history.snapshot",
    "Layout": f"{_HERE}.objects.layout",
    "normalize_workdir": f"{_HERE}.objects.layout",
    "project_hash": f"{_HERE}.objects.layout",
    "Project": f"{_HERE}.objects.repo",
    "Store": f"{_HERE}.objects.repo",
})
