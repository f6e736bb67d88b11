"""Store maintenance: keeping the shared store small without stalling an agent.

One module per job:

    sizes       how big the store is (cheap scandir), what is live and what is
                reclaimable (git)
    gitcli      running git itself (libgit2 has no gc)
    writers     rewindfs writers (shared) vs an explicit gc or clear (exclusive)
    gc          repack + prune: with a grace period, or now with writers held off
    verdict     live / stale / missing / deleted / orphan, deleted only with evidence
    quarantine  a deleted project is kept retention_days from when it was first seen
    adopt       a moved project's history re-keyed to its new path (by hand or on its
                first checkpoint there)
    removal     removing one project (ref, labels, admin dir, index, record)
    sizecap     max_total_size_mb: round-robin boundary moves, estimated then measured
    treediff    what one checkpoint's tree holds that the next one's does not
    inventory   per-project histories and labels in one pass over the refs
    ownership   bytes only one project holds (for `rewind status`)
    legacy      Hermes's pre-v2 repos: archived when the store is created, judged in
                place later; archives expire; clear
    sweep       prune: plan (read only), then apply exactly the plan, cap, gc
    marker      $base/.last_prune
    auto        the automatic sweep, started by the agent API off the checkpoint path
    firstuse    chores when a store is created (legacy migration, marker)
    status      `rewind status`
    wipe        `rewind clear`

Modules are imported directly (`from rewindfs.store.maintenance import sweep`);
this package imports nothing, so the store can call `firstuse` cheaply and
`python -m rewindfs.store.maintenance.auto` runs without warnings.
"""
