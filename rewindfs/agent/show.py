"""Everything known about one checkpoint, for `rewind show`: metadata, steps, state, actions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rewindfs import store as st
from rewindfs.agent.results import checkpoint_dict
from rewindfs.agent.stepbegin import (
    AGENT_TRAILER,
    PHASE_TRAILER,
    SESSION_TRAILER,
    STEP_TRAILER,
    TURN_TRAILER,
)
from rewindfs.agent.timeline import timeline_of
from rewindfs.errors import NotFound
from rewindfs.store.history import meta, trees
from rewindfs.store.projectgit import summary


def checkpoint_report(store: st.Store, workdir: Path, reference: str, key: str | None = None
                      ) -> dict[str, Any]:
    """`key`: a fetched project's (store.remote), read instead of the one at `workdir`; its
    step log stays on the machine that pushed it."""
    if not store.exists():
        raise NotFound(f"no checkpoints for {workdir}")
    repo, h16 = store.repo, key or st.project_hash(workdir)
    cp = st.resolve(repo, h16, reference)
    found = meta.meta_of(repo, h16, cp.id)
    report = checkpoint_dict(cp, st.stats(repo, cp, h16))
    steps = [] if key else _steps_at(store, h16, cp.id)
    who = next(((s["agent"], s["session"]) for s in steps if s["session"]), (None, None))
    report.update(
        directory=str(workdir),
        time=cp.time,
        parent=cp.parent_id,
        turn_id=cp.trailers.get(TURN_TRAILER),
        step_id=cp.trailers.get(STEP_TRAILER),
        phase=cp.trailers.get(PHASE_TRAILER),
        # The agent session it was taken for (its trailers; else the steps at it).
        agent=cp.trailers.get(AGENT_TRAILER) or who[0],
        session=cp.trailers.get(SESSION_TRAILER) or who[1],
        steps=steps,
        state=found.state,
        actions=[a.to_json() for a in found.actions],
        # the repository's state it recorded (kept on the machine that took it: not pushed)
        git=summary.describe(repo, cp.trailers) if key is None else None,
    )
    return report


def _steps_at(store: st.Store, h16: str, commit: str) -> list[dict[str, Any]]:
    """Steps that began or ended at this checkpoint's files (a step that changed nothing
    shares its checkpoint with the step before it). What a hook's step changed is read
    from its trees (its after event records none)."""
    out = []
    for step in timeline_of(store.layout, h16).steps.values():
        for phase, at in (("before", step.before_commit), ("after", step.after_commit)):
            if at == commit:
                if phase == "after" and step.call and step.after_tree and not step.changed:
                    step.changed = [os.fsdecode(c.path) for c in trees.changes(
                        store.repo, step.before_tree, step.after_tree)]
                out.append({**step.to_dict(), "phase": phase})
    return out
