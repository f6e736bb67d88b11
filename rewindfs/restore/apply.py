"""Carrying out a restore plan on disk, never writing outside the project (every write
goes through fdtree); surveying what a plan would touch; tidying up after a killed one.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from rewindfs.errors import StoreError
from rewindfs.restore.fdtree import Tree
from rewindfs.restore.plan import CHMOD, DELETE, Plan

TMP_NAME = re.compile(rb"^\..*\.rewind-[0-9a-f]{8}\.tmp\Z", re.DOTALL)

# A long restore reports `(actions done, actions in all, bytes written)` here; the CLI
# sets it on a terminal. A context variable, so other threads' restores stay quiet.
_progress: ContextVar[Callable[[int, int, int], None] | None] = ContextVar(
    "restore_progress", default=None)


@contextmanager
def reporting_progress(report: Callable[[int, int, int], None]) -> Iterator[None]:
    token = _progress.set(report)
    try:
        yield
    finally:
        _progress.reset(token)


@dataclass
class Outcome:
    written: list[bytes] = field(default_factory=list)
    deleted: list[bytes] = field(default_factory=list)
    created_dirs: list[bytes] = field(default_factory=list)
    failed: list[tuple[bytes, str]] = field(default_factory=list)
    not_attempted: list[bytes] = field(default_factory=list)

    @property
    def touched(self) -> list[bytes]:
        return [*self.written, *self.deleted]


def apply(plan: Plan, root: bytes, read_blob: Callable[[str], bytes],
          removable_dirs: set[bytes] | None = None, *, modes: dict[bytes, int] | None = None,
          outcome: Outcome | None = None) -> Outcome:
    """Deletes first (deepest first), then writes (parents first), then mode changes.

    Directories a delete leaves empty are removed; with `removable_dirs` (an undo)
    only those, so a directory that was empty before the restore stays, and those
    left empty at the end go too. `modes`: recorded modes of the target's paths.
    Pass `outcome` to see how far it got if it is interrupted.

    A failing file is recorded and the rest continue, except when the disk is full
    or read-only, where the remaining actions are reported as not attempted.
    """
    outcome = outcome if outcome is not None else Outcome()
    tree = Tree(root, removable_dirs, modes)
    report = _progress.get()
    written_bytes = 0
    try:
        deletes = sorted((a for a in plan.actions if a.kind == DELETE), key=lambda a: a.path,
                         reverse=True)
        writes = [a for a in plan.actions if a.kind not in (DELETE, CHMOD)]
        chmods = [a for a in plan.actions if a.kind == CHMOD]
        queue = [*deletes, *writes, *chmods]
        for i, action in enumerate(queue):
            try:
                if action.kind == DELETE:
                    tree.remove(action.path)
                    tree.prune_empty_dirs(action.path)
                    outcome.deleted.append(action.path)
                elif action.kind == CHMOD:
                    tree.chmod(action.path, action.entry)
                    outcome.written.append(action.path)
                else:
                    data = read_blob(action.entry.oid)
                    tree.write(action.path, action.entry, data)
                    outcome.written.append(action.path)
                    written_bytes += len(data)
            except FileNotFoundError as exc:
                if action.kind == DELETE:
                    outcome.deleted.append(action.path)  # already gone: the goal holds
                else:
                    outcome.failed.append((action.path, exc.strerror or str(exc)))
            except StoreError as exc:  # an unreadable blob: that file fails, the rest go on
                outcome.failed.append((action.path, str(exc)))
            except OSError as exc:
                outcome.failed.append((action.path, exc.strerror or str(exc)))
                if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                    outcome.not_attempted.extend(a.path for a in queue[i + 1 :])
                    break
            if report is not None:
                report(i + 1, len(queue), written_bytes)
        if removable_dirs is not None:
            tree.drop_empty_removable()
        tree.finish()
    finally:
        outcome.created_dirs = list(tree.created)
        tree.close()
    return outcome


def survey(root: bytes, plan: Plan) -> tuple[dict[bytes, int], list[bytes]]:
    """Before a restore: the modes of what it may overwrite or delete (files and every
    directory above them), and the directories it may create (missing now)."""
    modes: dict[bytes, int] = {}
    missing: set[bytes] = set()
    tree = Tree(root)
    try:
        for action in plan.actions:
            mode = tree.current_mode(action.path)
            if mode is not None and (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                modes[action.path] = mode
            parent = action.path.rpartition(b"/")[0]
            while parent and parent not in modes and parent not in missing:
                mode = tree.current_mode(parent)
                if mode is not None and stat.S_ISDIR(mode):
                    modes[parent] = mode
                elif action.kind != DELETE:
                    missing.add(parent)
                parent = parent.rpartition(b"/")[0]
    finally:
        tree.close()
    return modes, sorted(missing)


def tidy(root: bytes, dirs: Iterable[bytes]) -> list[bytes]:
    """Remove temporary files a killed restore left in `dirs` (project-relative; missing
    ones are skipped). Returns the paths removed."""
    removed = []
    tree = Tree(root)
    try:
        for rel_dir in sorted(set(dirs)):
            try:
                fd = tree.dir_fd(rel_dir, create=False)
                with os.scandir(fd) as listing:
                    names = [os.fsencode(e.name) for e in listing]
            except OSError:
                continue
            for name in names:
                if TMP_NAME.match(name):
                    try:
                        os.unlink(name, dir_fd=fd)
                        removed.append(rel_dir + b"/" + name if rel_dir else name)
                    except IsADirectoryError:
                        pass
                    except OSError:
                        continue
    finally:
        tree.close()
    return removed


