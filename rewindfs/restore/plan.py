"""Planning a restore: what it will do, decided before anything is touched.

The plan compares the working tree as just captured (`current`) with the target
checkpoint's tree. Only captured files take part: a path that is ignored, over
the size cap or unreadable is not in `current`, so it is never deleted, and if
the target wants to put a file where such an uncaptured one sits, it is left
alone and reported as untouched.
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
        action = _action(change, workdir, plan)
        if action is not None:
            plan.actions.append(action)
    return plan


def _action(change: Change, workdir: bytes, plan: Plan) -> Action | None:
    old, new = change.old, change.new
    if new is None:
        return Action(DELETE, change.path, None)
    if old is None:
        if _uncaptured_file_at(workdir, change.path):
            plan.untouched.append(change.path)  # present but not captured: not ours to replace
            return None
        return Action(CREATE, change.path, new)
    if old.oid == new.oid and not (old.is_link or new.is_link):
        return Action(CHMOD, change.path, new)
    return Action(OVERWRITE, change.path, new)


def _uncaptured_file_at(workdir: bytes, rel: bytes) -> bool:
    """Whether a non-directory sits at `rel` inside the project itself.

    Parents are checked with lstat: behind a symlinked parent (a link the restore
    replaces) the path names a file outside the project, not one in the way.
    """
    path = workdir
    parts = rel.split(b"/")
    try:
        for part in parts[:-1]:
            path += b"/" + part
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        return not stat.S_ISDIR(os.lstat(path + b"/" + parts[-1]).st_mode)
    except OSError:
        return False
