"""What `rewind show`, `cat`, `log` and `diff` tell about another agent's steps.

Read straight from the agent's snapshots (nothing is written anywhere), except
where a step meets our own checkpoints or the working tree (a diff against
them): then its tree is copied into the shared store first, where the two can be
compared (`in_store`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rewindfs import store as st
from rewindfs.errors import InvalidInput, NotFound
from rewindfs.sources.history import AgentHistory, Listed
from rewindfs.store.foreign import copy_trees
from rewindfs.store.history import DiffResult, pathlog, trees
from rewindfs.store.objects import writers

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def gone_message(history: AgentHistory, item: Listed) -> str:
    return (f"{item.short_ref} ({item.path}) is gone: {history.agent.label}'s git gc "
            f"removed its snapshot {item.step.start_tree[:8]}")


def state_tree(history: AgentHistory, item: Listed) -> str:
    """The tree of the project as the step found it, in the agent's snapshots."""
    return _subtree(history, item, item.step.start_tree)


def finish_tree(history: AgentHistory, item: Listed) -> str | None:
    """The tree the step left (None when the agent recorded none, or it is gone)."""
    tree = item.step.finish_tree
    if tree is None or not history.objects.exists(tree):
        return None
    return _subtree(history, item, tree)


def _subtree(history: AgentHistory, item: Listed, tree: str) -> str:
    if not history.objects.exists(tree):
        raise NotFound(gone_message(history, item))
    prefix = history.prefix(item.session)
    if not prefix:
        return tree
    found = history.objects.read(f"tree {tree[:8]}",
                                 lambda repo: trees.lookup_tree(repo, tree, prefix))
    if found is None or found.type_str != "tree":
        return EMPTY_TREE  # git knows it without storing it: nothing is written
    return str(found.id)


def read_file(history: AgentHistory, item: Listed, path: bytes) -> bytes:
    tree = state_tree(history, item)
    repo = history.objects.repo
    entry = trees.lookup(repo, tree, path)
    name = path.decode(errors="replace")
    if entry is None:
        if trees.is_dir(repo, tree, path):
            raise InvalidInput(f"{name!r} is a directory in {item.short_ref}")
        raise NotFound(f"{name!r} is not in {item.short_ref} ({item.path})")
    return history.objects.blob(entry.oid)


def step_diff(history: AgentHistory, item: Listed, paths: list[bytes] | None = None
              ) -> DiffResult | None:
    """What the step itself changed (its start tree to its finish tree)."""
    after = finish_tree(history, item)
    if after is None:
        return None
    return st.diff_between(history.objects.repo, state_tree(history, item), after, paths)


def diff(history: AgentHistory, old: Listed, new: Listed, paths: list[bytes] | None
         ) -> DiffResult:
    """Between two steps of the same agent, within its snapshots."""
    return st.diff_between(history.objects.repo, state_tree(history, old),
                           state_tree(history, new), paths)


@dataclass(frozen=True)
class PathStep:
    item: Listed
    status: str
    added: int
    deleted: int
    binary: bool


def path_log(history: AgentHistory, path: bytes, upto: Listed | None = None
             ) -> tuple[list[PathStep], int]:
    """The listed steps (newest first, `upto` and older) that changed `path`; and how many
    steps could not be looked at (gone)."""
    out, gone = [], 0
    repo = history.objects.repo
    for item in history.listed:
        if upto is not None and item.number < upto.number:
            continue
        try:
            before = state_tree(history, item)
        except NotFound:
            gone += 1
            continue
        after = finish_tree(history, item)
        if after is None:
            continue
        found = pathlog.change(repo, before, after, path)
        if found is not None:
            out.append(PathStep(item, *found))
    return out, gone


def entry(history: AgentHistory, item: Listed, mounted: str | None = None) -> dict[str, Any]:
    """One step as `rewind list --agent --json` and `rewind show --json` give it."""
    step, session = item.step, item.session
    data: dict[str, Any] = {
        "number": item.number, "ref": item.ref, "short_ref": item.short_ref,
        "agent": item.agent, "session": session.id, "session_title": session.title,
        "turn": item.turn.number, "step": step.name, "step_id": step.id,
        "prompt": item.turn.excerpt, "time": step.time,
        "tree": step.start_tree, "finish_tree": step.finish_tree,
        "files": list(item.files), "gone": history.gone(step), "reverted": step.reverted,
        "mount_path": item.path,
    }
    if mounted:
        data["path"] = mounted
    return data


def copy_states(store: st.Store, history: AgentHistory, items: list[Listed]) -> list[str]:
    """The steps' trees copied into the shared store; the caller holds the store's writers
    lock until it is done with them (a gc must not take them away)."""
    wanted = [state_tree(history, item) for item in items]
    copied = copy_trees(store, history.objects, wanted)
    for item, tree in zip(items, wanted, strict=True):
        if tree in copied.gone:
            raise NotFound(f"{item.short_ref} ({item.path}) is incomplete: "
                           f"{copied.gone[tree]}; nothing was changed")
    return wanted


@contextmanager
def in_store(store: st.Store, history: AgentHistory, items: list[Listed]) -> Iterator[list[str]]:
    """copy_states, with the writers lock held for the block."""
    store.ensure()
    with writers.writing(store.layout):
        yield copy_states(store, history, items)
