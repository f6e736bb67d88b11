"""Store maintenance: keeping the shared store small without stalling an agent.

May import: objects, capture, history.

One module per job:

    sizes       how big the store is (cheap scandir), what is live (git)
    objsizes    on-disk sizes per object and of the object database, remembered
    gc          repack + prune: with a grace period, or now with writers held off
                (objects.writers)
    cleanpacks  the packs a repack may leave as they are (nothing unreachable in them)
    quarantine  a deleted project is kept retention_days from when it was first seen
                (the verdict itself: history.verdict)
    removal     removing one project (ref, labels, admin dir, index, record)
    sizecap     max_total_size_mb: the oldest checkpoints across projects, estimated then
                measured
    autocap     the size cap after every checkpoint: a cheap look, a detached pruner
    caprecord   what the last pruning to the size cap dropped, and why
    repostates  project repositories' states (store.projectgit) go with their checkpoints:
                keepers rebuilt before gc, the cap's measurements and prices
    treediff    what one checkpoint's tree holds that the next one's does not
    inventory   per-project histories and labels in one pass over the refs
    liveset     what the refs keep alive: per-project counts, bytes only one project
                holds, reclaimable bytes (for `rewind status`), remembered
    legacy      Hermes's pre-v2 repos (archived when the store is created:
                objects.shadowrepos) judged in place later; archives expire; clear
    sweep       prune: plan (read only), then apply exactly the plan, cap, gc
    auto        the automatic sweep, started by the agent API off the checkpoint path
    status      `rewind status`
    wipe        `rewind clear`
    progress    how long operations report progress

The face is lazy (it imports nothing until a name is used), so
`python -m rewindfs.store.maintenance.auto` runs without warnings.
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.maintenance import (
        auto,
        autocap,
        caprecord,
        legacy,
        sizecap,
        status,
        sweep,
        wipe,
    )
    from rewindfs.store.maintenance.progress import quiet
    from rewindfs.store.maintenance.removal import remove_project
    from rewindfs.store.maintenance.status import StoreStatus, store_status
    from rewindfs.store.maintenance.sweep import Policy

_HERE = "rewindfs.store.maintenance"
__all__, __getattr__, __dir__ = face(_HERE, {
    "quiet": f"{_HERE}.progress",
    "remove_project": f"{_HERE}.removal",
    "StoreStatus": f"{_HERE}.status",
    "store_status": f"{_HERE}.status",
    "Policy": f"{_HERE}.sweep",
}, modules=("auto", "autocap", "caprecord", "legacy", "sizecap", "status", "sweep", "wipe"))
