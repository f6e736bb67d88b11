"""The store on disk: where things live, opening it, its objects written, read and verified.

May import: nothing else in the store (the bottom room).

    layout       where everything lives (Hermes v2 layout plus rewindfs's files)
    repo         opening and initialising the store; per-project handles (Store, Project)
    private      0700/0600 files and directories, never through a planted symlink
    locks        flock locks that die with their process; atomic writes
    durable      what reaches the disk before what names it (fsync, syncfs, libgit2's)
    liveness     whether a process is getting anywhere (work, chosen waits, stall limit)
    writers      rewindfs writers (shared) vs an explicit gc or clear (exclusive)
    ignore       the exclude files the store writes: what a checkpoint leaves out
    omitted      what a project's captures left out (over the cap, tracked but
                 excluded), remembered between captures
    readfilter   the `rewind-read` attribute: libgit2 never memory-maps a working file
    mounts       which filesystems are mounted where (/proc/self/mountinfo)
    firstuse     the one-time chores when a store is created
    shadowrepos  Hermes's pre-v2 repositories under the base, archived on creation
    marker       `$base/.last_prune`, when the last automatic sweep ran
    packwrite    where a pack is written: many new objects as one pack + .idx
    odbguard     which libgit2 reads the store; the verified loose reader for a stock one
    gitextra     libgit2 functions pygit2 does not declare
    gitcli       running git itself (gc, cat-file), where git is the right tool
    catfile      big blobs read by a long-lived `git cat-file --batch`, off the GIL
    damage       naming the damaged file behind a failed read
    notices      damage that does not stop a command, said once (a broken history)
    heal         damaged objects the next checkpoint writes again
    indexfile    a project index's header checked before libgit2 reads it
    probe        whether a checkpoint could write the store now: tried (`rewind doctor`)
    verify/      the store's files read and verified in Python, to name what is damaged:
                 check (`rewind check`), checkgit, checkfiles, problems, packs, loose
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.objects import (
        damage,
        durable,
        liveness,
        locks,
        marker,
        mounts,
        notices,
        odbguard,
        private,
        probe,
        writers,
    )
    from rewindfs.store.objects.catfile import BlobPipe
    from rewindfs.store.objects.ignore import DEFAULT_EXCLUDES
    from rewindfs.store.objects.layout import (
        Layout,
        default_home,
        normalize_workdir,
        project_hash,
    )
    from rewindfs.store.objects.mounts import refuse_inside_mount
    from rewindfs.store.objects.repo import Project, Store
    from rewindfs.store.objects.verify import check, lastcheck
    from rewindfs.store.objects.verify.problems import Problem, Report

_HERE = "rewindfs.store.objects"
__all__, __getattr__, __dir__ = face(_HERE, {
    "BlobPipe": f"{_HERE}.catfile",
    "DEFAULT_EXCLUDES": f"{_HERE}.ignore",
    "Layout": f"{_HERE}.layout",
    "default_home": f"{_HERE}.layout",
    "normalize_workdir": f"{_HERE}.layout",
    "project_hash": f"{_HERE}.layout",
    "Problem": f"{_HERE}.verify.problems",
    "Report": f"{_HERE}.verify.problems",
    "Project": f"{_HERE}.repo",
    "Store": f"{_HERE}.repo",
    "refuse_inside_mount": f"{_HERE}.mounts",
}, modules=("verify.check", "verify.lastcheck", "damage", "durable", "liveness", "locks",
            "marker", "mounts", "notices", "odbguard", "private", "probe", "writers"))
