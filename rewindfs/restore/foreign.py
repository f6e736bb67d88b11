"""Restores from another agent's step (Kilo Code, OpenCode): targets for `restore`.

A step's tree is copied into the shared store and given a commit on no ref (as
agent step reverts do, store.compose), so the restore itself is an ordinary one:
pre-rollback snapshot first, journalled, `rewind undo` takes it back. The caller
holds the store's writers lock from here until the restore is done, so a gc
cannot take the copied tree away in between.

Two kinds, as the agents offer them:

* `to_step`: the project (or named paths) as the step found it;
* `revert_from`: the agent's own "revert to here" on a message: every file the
  step and the later steps of its session changed goes back to what it was before
  the first of them that changed it, files they created are deleted, and every
  other file stays as it is. A file a step of another session changed too, while
  that first step ran or after it, keeps its bytes and is named (`kept`): a revert
  never takes back another session's work.
"""

from __future__ import annotations

import os

from rewindfs import store as st
from rewindfs.sources import model, reading
from rewindfs.sources.history import AgentHistory, Listed
from rewindfs.store.history import compose, trees


def describe(item: Listed) -> str:
    prompt = f" (turn {item.turn.number}: {item.turn.excerpt})" if item.turn.prompt else ""
    return f"{item.short_ref}: before {item.agent} step {item.step.name}{prompt}"


def to_step(store: st.Store, history: AgentHistory, item: Listed) -> st.Checkpoint:
    """A checkpoint (on no ref) of the project as the step found it."""
    tree = reading.copy_states(store, history, [item])[0]
    return compose.compose(store.repo, tree, {}, describe(item))


def revert_from(store: st.Store, history: AgentHistory, item: Listed
                ) -> tuple[st.Checkpoint, list[bytes], dict[bytes, list[tuple[str, str]]]]:
    """The target and the paths of the agent's "revert to here" from this step, and the
    files it keeps (each with the other sessions, (agent, session), that changed it)."""
    session = item.session
    later = [s for s in session.steps if (s.time, s.id) >= (item.step.time, item.step.id)]
    first_change: dict[bytes, model.Step] = {}
    for step in later:
        for path in _changed_files(history, item, step):
            first_change.setdefault(os.fsencode(path), step)
    needed = {item.step.id: item}
    others = [s for s in first_change.values() if s.id not in needed]
    listed_as = {x.step.id: x for x in history.listed}
    for step in others:
        needed[step.id] = listed_as.get(step.id) or _unlisted(item, step)
    states = reading.copy_states(store, history, list(needed.values()))
    copied = dict(zip(needed, states, strict=True))
    base = copied[item.step.id]
    repo = store.repo
    overrides = {}
    for path, step in first_change.items():
        wanted = trees.lookup(repo, copied[step.id], path)
        if step.id != item.step.id and wanted != trees.lookup(repo, base, path):
            overrides[path] = wanted
    target = compose.compose(repo, base, overrides,
                             f"{describe(item)}, reverting the steps after it")
    root = os.fsencode(str(history.workdir))
    kept = _others(history, item, first_change)
    # A file a later step created and another deleted again is in neither: nothing to do.
    scope = [p for p in sorted(first_change) if p not in kept and (
        trees.lookup(repo, target.tree_id, p) or os.path.lexists(root + b"/" + p))]
    return target, scope, kept


def _others(history: AgentHistory, item: Listed, first_change: dict[bytes, model.Step]
            ) -> dict[bytes, list[tuple[str, str]]]:
    """The files of `first_change` a step of another session changed while the first
    step to change it ran, or after (a step with no finish time: still running)."""
    if not first_change:
        return {}
    since = min(step.time for step in first_change.values())
    kept: dict[bytes, list[tuple[str, str]]] = {}
    for session in history.sessions:
        if session.id == item.session.id:
            continue
        for step in session.steps:
            if (step.finish_time if step.finish_time is not None else float("inf")) <= since:
                continue
            probe = Listed(0, item.agent, session, session.turn_of(step), step, ())
            for path in _changed_files(history, probe, step):
                first = first_change.get(os.fsencode(path))
                ended = step.finish_time if step.finish_time is not None else float("inf")
                who = (item.agent, session.id)
                if first is not None and ended > first.time and \
                        who not in kept.get(os.fsencode(path), []):
                    kept.setdefault(os.fsencode(path), []).append(who)
    return kept


def _changed_files(history: AgentHistory, item: Listed, step: model.Step) -> list[str]:
    """The project-relative files `step` changed: as the agent recorded them, else from
    its trees."""
    if step.files is not None:
        return model.relative_files(step, item.session.worktree,
                                    history.agent_root(item.session))
    probe = _unlisted(item, step)
    after = reading.finish_tree(history, probe)
    if after is None:
        return []
    before = reading.state_tree(history, probe)
    changes = trees.changes(history.objects.repo, before, after)
    return [os.fsdecode(c.path) for c in changes]


def _unlisted(item: Listed, step: model.Step) -> Listed:
    """A step that `rewind list` does not show (it changed nothing in the project), in
    the shape the readers take."""
    return Listed(0, item.agent, item.session, item.session.turn_of(step), step, ())
