"""History: checkpoints and what hangs off them, read and changed without rewriting history.

May import: objects, capture.

    snapshot      taking a checkpoint: capture, commit, compare-and-swap the ref
    refupdate     compare-and-swap of a ref: a lost race told apart from a failure
    signature     who and when a commit is by (the local offset in force, DST included)
    checkpoint    what a checkpoint is, its number, which one a reference names
    redaction     secrets out of reasons, summaries and logged command lines
    chain         a project's checkpoints: listed and numbered (1 = newest), loaded
    breaks        a history broken in the middle: where, and what is still there past it
    references    resolving what a person types: `3`, a label, a hash, `10 minutes ago`
    timeref       times as references (`10 minutes ago`, `@yesterday-14:00`, ISO)
    labels        named checkpoints (refs/rewind/labels); the one rule for their names
    bounds        what a tree holds, measured without walking what it repeats; the bounds
                  a fetched tree must keep to be read whole
    trailers      commit messages: the reason, then trailers
    leftout       what a checkpoint left out of its project: its record, said in words
    stamp         "nothing changed since the newest checkpoint" from metadata and the ref
    gitkeep       the project repository's states its checkpoints name, kept from gc
                  (refs/rewind/git/<h16>; the states themselves: store.projectgit)
    compose       restore targets made of several trees
    shallow       where history stops (git's `shallow` file)
    prune         dropping old checkpoints without rewriting history
    delete        one checkpoint out of a project's history
    projects      the projects registry (projects/<h16>.json)
    verdict       whether a project's history is still wanted (live ... orphan)
    adopt         a moved project keeps its history
    records/      the history records: each commit remembered once, chain summaries
    files/        what a checkpoint holds and how checkpoints differ (trees, diff, grep, log)
    metadata/     what agents record beside checkpoints (notes, steps, writes, actions)
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.history import (
        adopt,
        bounds,
        compose,
        delete,
        gitkeep,
        leftout,
        projects,
        redaction,
        stamp,
        timeref,
    )
    from rewindfs.store.history.chain import checkpoints, load, newest, page, walk
    from rewindfs.store.history.checkpoint import Checkpoint, SnapshotResult, Stats
    from rewindfs.store.history.files import diffstat, fileview, modes, pathlog, search, trees
    from rewindfs.store.history.files.browse import (
        EntryKind,
        ObjectReader,
        ProjectTip,
        StoreBrowser,
        TreeEntry,
    )
    from rewindfs.store.history.files.changestats import since_previous, stats, total_size
    from rewindfs.store.history.files.diff import DiffResult, working_tree_tree
    from rewindfs.store.history.files.quoting import quote_path, unquote_path
    from rewindfs.store.history.files.trees import EXECUTABLE, Change, Entry
    from rewindfs.store.history.labels import (
        LABEL_RE,
        labels_by_commit,
        move_label,
        refuse_taken,
        remove_label,
        set_label,
        validate_label,
    )
    from rewindfs.store.history.metadata import actions, carrying, ledger, meta, steplog
    from rewindfs.store.history.metadata.actions import Action
    from rewindfs.store.history.metadata.meta import CheckpointMeta
    from rewindfs.store.history.records.listpage import Page, Surprise
    from rewindfs.store.history.records.records import forget as forget_records
    from rewindfs.store.history.redaction import redact
    from rewindfs.store.history.references import holding, resolve, resolve_with_path
    from rewindfs.store.history.snapshot import locked, take, take_locked, tip
    from rewindfs.store.history.verdict import State

_HERE = "rewindfs.store.history"
__all__, __getattr__, __dir__ = face(_HERE, {
    "Action": f"{_HERE}.metadata.actions",
    "EntryKind": f"{_HERE}.files.browse",
    "ObjectReader": f"{_HERE}.files.browse",
    "ProjectTip": f"{_HERE}.files.browse",
    "StoreBrowser": f"{_HERE}.files.browse",
    "TreeEntry": f"{_HERE}.files.browse",
    "Checkpoint": f"{_HERE}.checkpoint",
    "checkpoints": f"{_HERE}.chain",
    "load": f"{_HERE}.chain",
    "newest": f"{_HERE}.chain",
    "page": f"{_HERE}.chain",
    "Page": f"{_HERE}.records.listpage",
    "Surprise": f"{_HERE}.records.listpage",
    "forget_records": f"{_HERE}.records.records:forget",
    "walk": f"{_HERE}.chain",
    "Stats": f"{_HERE}.checkpoint",
    "stats": f"{_HERE}.files.changestats",
    "since_previous": f"{_HERE}.files.changestats",
    "total_size": f"{_HERE}.files.changestats",
    "DiffResult": f"{_HERE}.files.diff",
    "working_tree_tree": f"{_HERE}.files.diff",
    "LABEL_RE": f"{_HERE}.labels",
    "labels_by_commit": f"{_HERE}.labels",
    "move_label": f"{_HERE}.labels",
    "refuse_taken": f"{_HERE}.labels",
    "remove_label": f"{_HERE}.labels",
    "set_label": f"{_HERE}.labels",
    "validate_label": f"{_HERE}.labels",
    "CheckpointMeta": f"{_HERE}.metadata.meta",
    "quote_path": f"{_HERE}.files.quoting",
    "unquote_path": f"{_HERE}.files.quoting",
    "redact": f"{_HERE}.redaction",
    "resolve": f"{_HERE}.references",
    "holding": f"{_HERE}.references",
    "resolve_with_path": f"{_HERE}.references",
    "SnapshotResult": f"{_HERE}.checkpoint",
    "locked": f"{_HERE}.snapshot",
    "take": f"{_HERE}.snapshot",
    "take_locked": f"{_HERE}.snapshot",
    "tip": f"{_HERE}.snapshot",
    "EXECUTABLE": f"{_HERE}.files.trees",
    "Change": f"{_HERE}.files.trees",
    "Entry": f"{_HERE}.files.trees",
    "State": f"{_HERE}.verdict",
}, modules=("metadata.actions", "adopt", "bounds", "compose", "delete", "files.diffstat",
            "gitkeep",
            "metadata.ledger", "metadata.meta", "metadata.carrying", "files.fileview",
            "files.modes", "files.pathlog", "projects", "files.search", "stamp",
            "metadata.steplog", "timeref", "files.trees", "redaction", "leftout"))
