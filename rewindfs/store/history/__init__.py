"""History: checkpoints and what hangs off them, read and changed without rewriting history.

May import: objects, capture.

    snapshot      taking a checkpoint: capture, commit, compare-and-swap the ref
    refupdate     compare-and-swap of a ref: a lost race told apart from a failure
    signature     who and when a commit is by (the local offset in force, DST included)
    checkpoint    what a checkpoint is, its number, which one a reference names (no libgit2)
    quickread     checkpoints listed, resolved and read without libgit2 (the CLI's quick path)
    quickdiff     lines changed since the newest checkpoint, counted without libgit2
    chain         a project's checkpoints: listed and numbered (1 = newest), loaded
    records, recordfile, recordtail   each commit remembered (caches/<h16>.history), chain
                  summaries; read from the file's end
    listpage      a long history read from its tip only as far as it is shown
    references    resolving what a person types: `3`, a label, a hash, `10 minutes ago`
    timeref       times as references (`10 minutes ago`, `@yesterday-14:00`, ISO)
    changestats   what a checkpoint changed and holds (files, lines, bytes)
    trees         reading a checkpoint's files: entries, blobs, changes; unsafe names
    bounds        what a tree holds, measured without walking what it repeats; the bounds
                  a fetched tree must keep to be read whole
    browse        the mount's only door to git: threads, retries, damage named
    labels        named checkpoints (refs/rewind/labels)
    trailers      commit messages: the reason, then trailers
    notes, meta   JSON notes per checkpoint: agent state documents, external actions
    modes         real permission bits a restore recorded beside its pre-rollback snapshot
    actions, ledger, steplog   pending actions, agent writes, agent steps (JSON lines)
    stamp         "nothing changed since the newest checkpoint" from metadata, no git
    compose       restore targets made of several trees
    shallow       where history stops (git's `shallow` file)
    prune         dropping old checkpoints without rewriting history
    delete        one checkpoint out of a project's history
    diff, diffstat, quoting    differences, git's --stat, git-style quoted names
    pathlog       one path through the checkpoints (`rewind log`)
    search        `rewind grep`
    projects      the projects registry (projects/<h16>.json)
    verdict       whether a project's history is still wanted (live ... orphan)
    adopt         a moved project keeps its history
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.history import (
        actions,
        adopt,
        bounds,
        compose,
        delete,
        diffstat,
        ledger,
        meta,
        modes,
        pathlog,
        projects,
        quickdiff,
        quickread,
        search,
        stamp,
        steplog,
        timeref,
        trees,
    )
    from rewindfs.store.history.actions import Action
    from rewindfs.store.history.browse import (
        EntryKind,
        ObjectReader,
        ProjectTip,
        StoreBrowser,
        TreeEntry,
    )
    from rewindfs.store.history.chain import checkpoints, load, page, walk
    from rewindfs.store.history.changestats import stats, total_size
    from rewindfs.store.history.checkpoint import Checkpoint, SnapshotResult, Stats
    from rewindfs.store.history.diff import DiffResult, working_tree_tree
    from rewindfs.store.history.labels import (
        LABEL_RE,
        labels_by_commit,
        move_label,
        refuse_taken,
        remove_label,
        set_label,
        validate_label,
    )
    from rewindfs.store.history.listpage import Page, Surprise
    from rewindfs.store.history.meta import CheckpointMeta
    from rewindfs.store.history.quoting import quote_path
    from rewindfs.store.history.records import forget as forget_records
    from rewindfs.store.history.references import resolve, resolve_with_path
    from rewindfs.store.history.snapshot import locked, take, take_locked, tip
    from rewindfs.store.history.trees import EXECUTABLE, Change, Entry
    from rewindfs.store.history.verdict import State

_HERE = "rewindfs.store.history"
__all__, __getattr__, __dir__ = face(_HERE, {
    "Action": f"{_HERE}.actions",
    "EntryKind": f"{_HERE}.browse",
    "ObjectReader": f"{_HERE}.browse",
    "ProjectTip": f"{_HERE}.browse",
    "StoreBrowser": f"{_HERE}.browse",
    "TreeEntry": f"{_HERE}.browse",
    "Checkpoint": f"{_HERE}.checkpoint",
    "checkpoints": f"{_HERE}.chain",
    "load": f"{_HERE}.chain",
    "page": f"{_HERE}.chain",
    "Page": f"{_HERE}.listpage",
    "Surprise": f"{_HERE}.listpage",
    "forget_records": f"{_HERE}.records:forget",
    "walk": f"{_HERE}.chain",
    "Stats": f"{_HERE}.checkpoint",
    "stats": f"{_HERE}.changestats",
    "total_size": f"{_HERE}.changestats",
    "DiffResult": f"{_HERE}.diff",
    "working_tree_tree": f"{_HERE}.diff",
    "LABEL_RE": f"{_HERE}.labels",
    "labels_by_commit": f"{_HERE}.labels",
    "move_label": f"{_HERE}.labels",
    "refuse_taken": f"{_HERE}.labels",
    "remove_label": f"{_HERE}.labels",
    "set_label": f"{_HERE}.labels",
    "validate_label": f"{_HERE}.labels",
    "CheckpointMeta": f"{_HERE}.meta",
    "quote_path": f"{_HERE}.quoting",
    "resolve": f"{_HERE}.references",
    "resolve_with_path": f"{_HERE}.references",
    "SnapshotResult": f"{_HERE}.checkpoint",
    "locked": f"{_HERE}.snapshot",
    "take": f"{_HERE}.snapshot",
    "take_locked": f"{_HERE}.snapshot",
    "tip": f"{_HERE}.snapshot",
    "EXECUTABLE": f"{_HERE}.trees",
    "Change": f"{_HERE}.trees",
    "Entry": f"{_HERE}.trees",
    "State": f"{_HERE}.verdict",
}, modules=("actions", "adopt", "bounds", "compose", "delete", "diffstat", "ledger", "meta",
            "modes", "pathlog", "projects", "quickdiff", "quickread", "search", "stamp",
            "steplog", "timeref", "trees"))
