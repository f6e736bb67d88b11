"""Capture: a working directory read truthfully into its project's index and tree.

May import: objects.

    workdir       capturing a working directory (the entry point: `capture`)
    changesource  where a capture learns what changed: a watch, when one is registered
    graft         the next tree from a trusted capture's and the paths changed since
    changes       finding what changed since the last capture, retried on a changing tree
    walk          one pass over the tree: size cap, max_files, nested repositories
    tracked       files git tracks, captured whatever the excludes say (git's index read)
    storing       storing what the walk found: packs, a few loose objects, index entries
    fileread      one working-tree file read as a blob, or a truthful refusal
                  (changing, unreadable); never mmap
    splitstore    a large capture on two cores (a forked child stores half)
    deepdirs      directories nested deeper than libgit2 walks
    secret_files  private keys the secret defaults keep out
    interrupts    Ctrl-C inside libgit2 callbacks
    progress      how far a long capture is
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.capture import changesource, interrupts, secret_files
    from rewindfs.store.capture.changesource import Plan
    from rewindfs.store.capture.graft import Since
    from rewindfs.store.capture.progress import Progress, reporting_progress
    from rewindfs.store.capture.tracked import git_ignores
    from rewindfs.store.capture.walk import DEFAULT_LIMITS, Limits
    from rewindfs.store.capture.workdir import Capture, capture, ignored_now

_HERE = "rewindfs.store.capture"
__all__, __getattr__, __dir__ = face(_HERE, {
    "Capture": f"{_HERE}.workdir",
    "capture": f"{_HERE}.workdir",
    "ignored_now": f"{_HERE}.workdir",
    "DEFAULT_LIMITS": f"{_HERE}.walk",
    "git_ignores": f"{_HERE}.tracked",
    "Limits": f"{_HERE}.walk",
    "Plan": f"{_HERE}.changesource",
    "Since": f"{_HERE}.graft",
    "Progress": f"{_HERE}.progress",
    "reporting_progress": f"{_HERE}.progress",
}, modules=("changesource", "interrupts", "secret_files"))
