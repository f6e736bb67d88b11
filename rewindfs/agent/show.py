"""Everything known about one checkpoint, for `rewind show`: metadata, steps, state, actions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewindfs import store as st
from rewindfs.agent.results import checkpoint_dict
from rewindfs.agent.stepbegin import PHASE_TRAILER, STEP_TRAILER, TURN_TRAILER
from rewindfs.agent.timeline import timeline_of
from rewindfs.errors import NotFound
from rewindfs.store.history import meta
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
    report.update(
        directory=str(workdir),
        time=cp.time,
        parent=cp.parent_id,
        turn_id=cp.trailers.get(TURN_TRAILER),
        step_id=cp.trailers.get(STEP_TRAILER),
        phase=cp.trailers.get(PHASE_TRAILER),
        steps=[] if key else _steps_at(store.layout, h16, cp.id),
        state=found.state,
        actions=[a.to_json() for a in found.actions],
        # the repository's state it recorded (kept on the machine that took it: not pushed)
        git=summary.describe(repo, cp.trailers) if key is None else None,
    )
    return report


def _steps_at(layout: st.Layout, h16: str, commit: str) -> list[dict[str, Any]]:
    """Steps that began or ended at this checkpoint's files (a step that changed nothing
    shares its checkpoint with the step before it)."""
    out = []
    for step in timeline_of(layout, h16).steps.values():
        for phase, at in (("before", step.before_commit), ("after", step.after_commit)):
            if at == commit:
                out.append({**step.to_dict(), "phase": phase})
    return out
