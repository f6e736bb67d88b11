"""Store maintenance: keeping the shared store small without stalling an agent.

One module per job:

    sizes       how big the store is (cheap scandir) and what is live (git)
    gitcli      running git itself (libgit2 has no gc)
    gc          repack + prune with a grace period, safe next to checkpoints
    verdict     live / stale / orphan / missing, orphan only with evidence
    removal     removing one project (ref, labels, admin dir, index, record)
    sizecap     max_total_size_mb: round-robin boundary moves, estimated then measured
    treediff    what one checkpoint's tree holds that the next one's does not
    inventory   per-project histories and labels in one pass over the refs
    ownership   bytes only one project holds (for `rewind status`)
    legacy      Hermes v1 shadow repos: archive on first use, expire, clear
    sweep       prune: plan (read only), then apply exactly the plan, cap, gc
    marker      $base/.last_prune
    auto        the automatic sweep, started by the agent API off the checkpoint path
    firstuse    chores when a store is opened (legacy migration)
    status      `rewind status`
    wipe        `rewind clear`

Modules are imported directly (`from rewindfs.store.maintenance import sweep`);
this package imports nothing, so the store can call `firstuse` cheaply and
`python -m rewindfs.store.maintenance.auto` runs without warnings.
"""
