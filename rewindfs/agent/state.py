"""Agent state documents and external actions, as the manager and the CLI hand them out.

The store side (where they live, how a checkpoint comes to carry them) is
store.history.metadata.meta; this module turns them into result dictionaries and warnings.
"""

from __future__ import annotations

from typing import Any

from rewindfs import restore as restore_mod
from rewindfs import store as st
from rewindfs.errors import NotFound
from rewindfs.store.history import Action, actions, meta


def record_action(layout: st.Layout, working_dir: str, kind: str, id: str | int,
                  summary: str = "", reversible: bool = False) -> Action:
    """Note an external action; the project's next checkpoint carries it."""
    action = Action.make(kind, id, summary, reversible)
    actions.record(layout, st.project_hash(st.normalize_workdir(working_dir)), action)
    return action


def state_of(store: st.Store, working_dir: str, reference: str) -> dict[str, Any]:
    """The state documents and carried actions of one checkpoint."""
    wd = st.normalize_workdir(working_dir)
    if not store.exists():
        raise NotFound(f"no checkpoints for {wd}")
    h16 = st.project_hash(wd)
    target = st.resolve(store.repo, h16, reference)
    found = meta.meta_of(store.repo, h16, target.id)
    return {"hash": target.id, "short_hash": target.short, "state": found.state,
            "actions": [a.to_json() for a in found.actions]}


def restore_report(store: st.Store, result: restore_mod.RestoreResult,
                   source: str | None = None) -> dict[str, Any]:
    """What a restore hands back besides files: the target's state documents, and the
    external actions taken after it, which no rollback undoes. `source`: the fetched
    project the target came from (its actions were taken on another machine)."""
    h16 = st.project_hash(result.directory)
    found = meta.meta_of(store.repo, source or h16, result.target.id)
    later = [] if source else meta.actions_after(store, h16, result.target)
    return {"state": found.state, "external_actions": [a.to_json() for a in later],
            "warnings": [warning(a) for a in later]}


def warning(action: Action) -> str:
    text = f"not undone by rollback: {action.describe()}"
    if action.summary:
        text += f" ({action.summary})"
    if action.reversible:
        text += " [reversible: undo it yourself]"
    return text
