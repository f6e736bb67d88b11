"""Carrying out a restore plan on disk, never writing outside the project (every write
goes through fdtree); surveying what a plan would touch; tidying up after a killed one.

Files are written in batches, so that what a power cut can lose stays bounded without
an fsync per file and per rename: a batch's files are written under temporary names,
their data made durable (an fsync each when the restore writes a few, else one
syncfs(2) per batch), then renamed into place, and each directory whose names changed
is fsynced once (fdtree.settle) before the next batch and before the journal records
the restore as finished.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from rewindfs.errors import StoreError
from rewindfs.restore import pause
from rewindfs.restore.fdtree import Blob, Staged, Tree
from rewindfs.restore.plan import CHMOD, CREATE, DELETE, Action, Plan

TMP_NAME = re.compile(rb"^\..*\.rewind-[0-9a-f]{8}\.tmp\Z", re.DOTALL)
FSYNC_EACH_MAX = 16  # files a restore fsyncs one by one; more are synced by one syncfs
BATCH_FILES = 1024  # files written under temporary names before they are put in place
BATCH_BYTES = 64 << 20
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)  # nothing more can be written

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


# Called as `apply` starts (a restore's journal intent is written by then, and no file
# has changed yet) with the plan and the root: where tests pause a restore, exactly.
_pause: ContextVar[Callable[[Plan, bytes], None] | None] = ContextVar("restore_pause",
                                                                      default=None)


@contextmanager
def pausing(hook: Callable[[Plan, bytes], None]) -> Iterator[None]:
    """Run `hook(plan, root)` at the start of every `apply` in this context."""
    token = _pause.set(hook)
    try:
        yield
    finally:
        _pause.reset(token)


@dataclass
class Outcome:
    written: list[bytes] = field(default_factory=list)
    deleted: list[bytes] = field(default_factory=list)
    created_dirs: list[bytes] = field(default_factory=list)
    failed: list[tuple[bytes, str]] = field(default_factory=list)
    not_attempted: list[bytes] = field(default_factory=list)
    # Created by the plan, but a file appeared at the name meanwhile (a person saving,
    # a build): that file is kept, and it is in no snapshot yet.
    appeared: list[bytes] = field(default_factory=list)

    @property
    def touched(self) -> list[bytes]:
        return [*self.written, *self.deleted]


def apply(plan: Plan, root: bytes, read_blob: Callable[[str], Blob],
          removable_dirs: set[bytes] | None = None, *, modes: dict[bytes, int] | None = None,
          outcome: Outcome | None = None) -> Outcome:
    """Deletes first (deepest first), then writes (parents first), then mode changes;
    everything durable when it returns (see the module docstring).

    Directories a delete leaves empty are removed; with `removable_dirs` (an undo)
    only those, so a directory that was empty before the restore stays, and those
    left empty at the end go too. `modes`: recorded modes of the target's paths.
    Pass `outcome` to see how far it got if it is interrupted.

    A failing file is recorded and the rest continue, except when the disk is full
    or read-only, where the remaining actions are reported as not attempted.
    """
    outcome = outcome if outcome is not None else Outcome()
    pause = _pause.get()
    if pause is not None:
        pause(plan, root)
    tree = Tree(root, removable_dirs, modes)
    run = _Run(plan, tree, read_blob, outcome)
    try:
        run.all()
        if removable_dirs is not None:
            tree.drop_empty_removable()
        tree.finish()
        tree.settle()
    finally:
        run.drop_staged()
        outcome.created_dirs = list(tree.created)
        tree.close()
    return outcome


class _Full(Exception):
    """The disk is full or read-only: nothing more is attempted."""


class _Run:
    """One application of a plan: the queue, the batch in flight, progress."""

    def __init__(self, plan: Plan, tree: Tree, read_blob: Callable[[str], Blob],
                 outcome: Outcome):
        self.tree, self.read_blob, self.outcome = tree, read_blob, outcome
        deletes = sorted((a for a in plan.actions if a.kind == DELETE), key=lambda a: a.path,
                         reverse=True)
        writes = [a for a in plan.actions if a.kind not in (DELETE, CHMOD)]
        chmods = [a for a in plan.actions if a.kind == CHMOD]
        self.queue = [*deletes, *writes, *chmods]
        self.sync_each = len(writes) <= FSYNC_EACH_MAX
        self.staged: deque[tuple[Action, Staged, int]] = deque()  # (action, file, bytes)
        self.staged_bytes = 0
        self.done = 0
        self.written_bytes = 0
        self.report = _progress.get()

    def all(self) -> None:
        taken = 0  # actions handed to `one` so far
        try:
            for action in self.queue:
                if action.kind == CHMOD:
                    self.flush()  # a mode change applies to the file in place
                taken += 1
                self.one(action)
            self.flush()
        except _Full:
            try:
                self.flush()  # what is written already goes in place: renames need no space
            except _Full:
                pass
            rest = [a.path for a, _s, _n in self.staged]
            self.drop_staged()
            self.outcome.not_attempted.extend(rest)
            self.outcome.not_attempted.extend(a.path for a in self.queue[taken:])
            self.tree.settle()

    def one(self, action: Action) -> None:
        tree, outcome = self.tree, self.outcome
        try:
            if action.kind == DELETE:
                try:
                    tree.remove(action.path)
                    tree.prune_empty_dirs(action.path)
                except FileNotFoundError:
                    pass  # already gone: the goal holds
                outcome.deleted.append(action.path)
            elif action.kind == CHMOD:
                tree.chmod(action.path, action.entry)
                outcome.written.append(action.path)
            else:
                data = self.read_blob(action.entry.oid)
                size = len(data) if isinstance(data, bytes) else data.size
                staged = tree.stage(action.path, action.entry, data,
                                    create=action.kind == CREATE, sync=self.sync_each)
                self.staged.append((action, staged, size))
                self.staged_bytes += size
                if len(self.staged) >= BATCH_FILES or self.staged_bytes >= BATCH_BYTES:
                    self.flush()
                return  # its progress is counted when it is in place
        except StoreError as exc:  # an unreadable blob: that file fails, the rest go on
            outcome.failed.append((action.path, str(exc)))
        except OSError as exc:
            outcome.failed.append((action.path, exc.strerror or str(exc)))
            if exc.errno in _FULL:
                raise _Full from exc
        self.progress()

    def flush(self) -> None:
        """Put the staged batch in place: data synced, renamed, directories synced."""
        if not self.staged:
            return
        tree, outcome = self.tree, self.outcome
        if not self.sync_each:
            tree.sync_staged([s for _a, s, _n in self.staged])
        while self.staged:
            action, staged, size = self.staged[0]  # popped once settled: Ctrl-C drops it
            try:
                placed = tree.place(staged)
            except OSError as exc:
                self.staged.popleft()
                outcome.failed.append((action.path, exc.strerror or str(exc)))
                if exc.errno in _FULL:
                    raise _Full from exc
            else:
                self.staged.popleft()
                if placed:
                    outcome.written.append(action.path)
                    self.written_bytes += size
                else:
                    outcome.appeared.append(action.path)
            self.staged_bytes -= size
            self.progress()
        tree.settle()

    def drop_staged(self) -> None:
        """Remove staged files never placed (Ctrl-C, an error): nothing names them."""
        while self.staged:
            self.tree.discard(self.staged.popleft()[1])
        self.staged_bytes = 0

    def progress(self) -> None:
        self.done += 1
        if self.report is not None:
            self.report(self.done, len(self.queue), self.written_bytes)
        pause.after(self.done)  # a test hook: a kill that lands midway (restore.pause)


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


