"""Planning a restore: what it will do, decided before anything is touched.

The plan compares the working tree as just captured (`current`) with the target
checkpoint's tree. Only captured files take part: a path that is ignored, over
the size cap or unreadable is not in `current`, so it is never deleted, and if
the target wants to put a file where such an uncaptured one sits (or a directory
holding one, or a file where the target has a directory), it is left alone and
reported as untouched: the plan says what the restore will really do.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from rewindfs.restore.paths import in_scope
from rewindfs.store.history import Change, Entry

OVERWRITE, CREATE, DELETE, CHMOD = "overwrite", "create", "delete", "chmod"


@dataclass
class Action:
    kind: str
    path: bytes
    entry: Entry | None  # what to write (None for delete)


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    kept_user_edits: list[bytes] = field(default_factory=list)  # safe mode: a person edited
    kept_not_agent: list[bytes] = field(default_factory=list)  # safe mode: agent never wrote
    untouched: list[bytes] = field(default_factory=list)  # uncaptured file in the way
    # An undo: paths to put back that are in neither the target nor the working tree
    # (a file the restore created, deleted since): nothing to do for them.
    gone: list[bytes] = field(default_factory=list)

    def of(self, kind: str) -> list[bytes]:
        return [a.path for a in self.actions if a.kind == kind]

    @property
    def deletes(self) -> list[bytes]:
        return self.of(DELETE)

    def counts(self) -> dict[str, int]:
        out = {k: len(self.of(k)) for k in (OVERWRITE, CREATE, DELETE, CHMOD)}
        out.update(kept_user_edits=len(self.kept_user_edits),
                   kept_not_agent=len(self.kept_not_agent), untouched=len(self.untouched))
        return out


def build(
    changes: list[Change],
    workdir: bytes,
    scope: list[bytes] | None = None,
    agent_writes: dict[bytes, str | None] | None = None,
) -> Plan:
    """The plan for turning `current` into the target.

    `changes` go from the current tree (old) to the target (new). With
    `agent_writes` (safe mode), a path is reverted only when its current content
    is still what the agent last wrote (None: the agent deleted it), or when a file
    the agent wrote is gone: its last known content was the agent's, and bringing it
    back overwrites nothing.
    """
    plan = Plan()
    for change in sorted(changes, key=lambda c: c.path):
        if not in_scope(change.path, scope):
            continue
        if agent_writes is not None:
            if change.path not in agent_writes:
                plan.kept_not_agent.append(change.path)
                continue
            current = change.old.oid if change.old else None
            if current is not None and agent_writes[change.path] != current:
                plan.kept_user_edits.append(change.path)
                continue
        plan.actions.append(_action(change))
    _keep_what_is_in_the_way(plan, workdir)
    return plan


def _action(change: Change) -> Action:
    old, new = change.old, change.new
    if new is None:
        return Action(DELETE, change.path, None)
    if old is None:
        return Action(CREATE, change.path, new)
    if old.oid == new.oid and not (old.is_link or new.is_link):
        return Action(CHMOD, change.path, new)
    return Action(OVERWRITE, change.path, new)


def _keep_what_is_in_the_way(plan: Plan, workdir: bytes) -> None:
    """A file the plan would create where something stands that the plan does not
    remove (an ignored, oversize or unreadable file; a directory still holding such
    files, or empty directories, once the plan's deletes are done; a file or link
    where a parent directory goes) is not created: what is there is not the restore's
    to replace, and it is kept and reported as untouched."""
    deleted = set(plan.deletes)
    kept = []
    for action in plan.actions:
        if action.kind == CREATE and _in_the_way(workdir, action.path, deleted):
            plan.untouched.append(action.path)
        else:
            kept.append(action)
    plan.actions = kept


def _in_the_way(workdir: bytes, rel: bytes, deleted: set[bytes]) -> bool:
    """Whether something the plan does not delete stands at `rel`, or at a parent of it
    that is no directory (lstat: a link is never followed)."""
    path, prefix = workdir, b""
    parts = rel.split(b"/")
    try:
        for part in parts[:-1]:
            path += b"/" + part
            prefix = prefix + b"/" + part if prefix else part
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return prefix not in deleted  # a file or link the plan replaces, or not
        path += b"/" + parts[-1]
        mode = os.lstat(path).st_mode
    except OSError:
        return False  # nothing there (a parent missing, or no longer a directory)
    # The plan creates `rel`, so it is in no captured tree: a non-directory there is
    # uncaptured. A directory goes if the plan's deletes leave it empty.
    return not stat.S_ISDIR(mode) or not _emptied(path, rel, deleted)


def _emptied(full: bytes, rel: bytes, deleted: set[bytes]) -> bool:
    """Whether the directory `rel` holds nothing once `deleted` are (a delete removes
    the directories it leaves empty, restore.apply): below it, only directories and
    deleted files, and no directory that no delete empties."""
    stack = [(full, rel)]
    try:
        while stack:
            here, where = stack.pop()
            with os.scandir(here) as listing:
                found = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
            if not found and where != rel:
                return False  # an empty directory no delete removes
            for name, is_dir in found:
                child = where + b"/" + name
                if is_dir:
                    stack.append((here + b"/" + name, child))
                elif child not in deleted:
                    return False
    except OSError:
        return False  # a directory it may not list: what is in it is not known
    return True
