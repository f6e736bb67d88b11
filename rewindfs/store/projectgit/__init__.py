"""The project's own git repository (its `.git`): its state recorded beside a checkpoint,
described, and the bytes that give it back.

May import: objects, history.

    bounds      what is recorded at most (size, refs, files, time); what is refused, in
                one line each (a worktree's `.git` file, a symlink, a shallow or partial
                clone, borrowed objects, over the size bound)
    reading     the repository read through libgit2: refs, HEAD, the stash's reflog, the
                index, config, hooks; which objects the store must hold
    statetree   a state as a commit of the store (its parents keep every commit alive),
                read back and validated
    copying     the objects copied in by git's own fetch, only what is new, verified
    recording   recording with a checkpoint (take_locked's recorder), the closing note
    giving      what a restore writes to give a state back: a pack of what the
                repository lacks, packed-refs, HEAD, the index, files and hooks
    summary     a state in words (`rewind show`), and how `.git` differs from it now

The states are kept alive by history.gitkeep (`refs/rewind/git/<h16>`); a checkpoint names
its state in the `Rewind-Git-State` trailer.
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.projectgit import summary
    from rewindfs.store.projectgit.bounds import Bounds, Refusal
    from rewindfs.store.projectgit.giving import SKELETON, Giving, prepare
    from rewindfs.store.projectgit.recording import Recorded, Recorder, record, tip_state
    from rewindfs.store.projectgit.statetree import State
    from rewindfs.store.projectgit.statetree import load as load_state

_HERE = "rewindfs.store.projectgit"
__all__, __getattr__, __dir__ = face(_HERE, {
    "Bounds": f"{_HERE}.bounds",
    "Refusal": f"{_HERE}.bounds",
    "SKELETON": f"{_HERE}.giving",
    "Giving": f"{_HERE}.giving",
    "prepare": f"{_HERE}.giving",
    "Recorded": f"{_HERE}.recording",
    "Recorder": f"{_HERE}.recording",
    "record": f"{_HERE}.recording",
    "tip_state": f"{_HERE}.recording",
    "State": f"{_HERE}.statetree",
    "load_state": f"{_HERE}.statetree:load",
}, modules=("summary",))
