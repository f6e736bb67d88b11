"""Restores: whole tree, directories or single files, always undoable.

Order of a restore, all under the project lock so no checkpoint sees a half
restored tree:
1. a pre-rollback snapshot of the working tree as it is (or, when nothing changed,
   the newest checkpoint serves as that record). A restore of named paths captures
   just those paths afresh (the rest as the last capture saw it): everything the
   restore can change is saved, without re-reading the whole project. A file over
   the size cap that the target holds (it grew since) is reverted like any other, so
   the snapshot holds it whatever its size;
2. the target's tree checked for names that must never be written (`..`, `.git`,
   ...), and one fetched from a remote for its bounds (store.history.bounds), then a
   plan from the captured tree to it (safe mode keeps files a person
   edited since the agent wrote them);
3. the modes of what it will overwrite or delete recorded with the pre-rollback
   snapshot (store.history.files.modes), and the intent recorded in the journal: target,
   pre-rollback id, every path it will touch, every directory it may create;
4. the plan applied with per-file atomic writes, never outside the project, and
   durable before step 5 (restore.apply); a file the plan creates never replaces one
   that appeared meanwhile (kept and reported: `Outcome.appeared`);
5. a completion record in the journal: done, failed (some files, or an error it
   could not go on from) or interrupted (Ctrl-C), with what it touched.
A restore killed between 3 and 5 is undone from its intent record (see `undo`);
its temporary files are removed by the next restore or undo of the project. One that
fails or is refused after 1 and before 3 (nothing changed yet) records nothing in the
journal, and `undo` walks past restores that changed no file: it takes back the last
one that did. A plan a person confirmed is carried out as shown or refused (confirm).

    restoring  a restore carried out, undo, dry runs
    exporting  a checkpoint written into a new directory (`--to DIR`)
    gitrestore the project's `.git` given back (`--git`): recreated, or its refs set back
    plan       where a restore is planned: what it will write, delete and keep
    apply      carrying the plan out; fdtree: the tree reached only through descriptors
    dirfds     those directory descriptors: no link followed, few open, deep trees too
    journal    intent before, completion after (undo)
    confirm    a confirmed plan carried out as shown, or refused
    pause      a test hook: a restore that stops after N files (killed-restore tests)
    paths      project-relative paths, checked
    foreign    targets from another agent's step (Kilo Code, OpenCode), and its revert
"""
# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.restore import apply, confirm, foreign, journal, paths, pause, plan
    from rewindfs.restore.exporting import export
    from rewindfs.restore.paths import project_relative
    from rewindfs.restore.restoring import (
        Options,
        RestoreResult,
        dry_run,
        restore,
        undo,
    )

_HERE = "rewindfs.restore"
__all__, __getattr__, __dir__ = face(_HERE, {
    "project_relative": f"{_HERE}.paths",
    "Options": f"{_HERE}.restoring",
    "RestoreResult": f"{_HERE}.restoring",
    "dry_run": f"{_HERE}.restoring",
    "export": f"{_HERE}.exporting",
    "restore": f"{_HERE}.restoring",
    "undo": f"{_HERE}.restoring",
}, modules=("apply", "confirm", "foreign", "gitrestore", "journal", "pause", "paths", "plan"))
