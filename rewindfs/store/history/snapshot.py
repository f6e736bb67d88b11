"""Taking a checkpoint: capture the tree, commit it on the project ref, never lose a race.

The project lock serialises rewindfs writers of one project. Hermes Agent may
write the same ref without that lock, so the ref update is compare-and-swap
(libgit2 refuses to move a ref whose value changed since it was read, and a
ref that must not exist yet is created without force); on a lost race the
commit is rebuilt on the new tip and tried again.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pygit2

from rewindfs.errors import Busy, StoreError
from rewindfs.store.capture import interrupts
from rewindfs.store.capture.walk import DEFAULT_LIMITS, Limits
from rewindfs.store.capture.workdir import Capture, capture
from rewindfs.store.history import adopt, leftout, projects, refupdate
from rewindfs.store.history.chain import STATS_TRAILER, TIME_TRAILER
from rewindfs.store.history.checkpoint import SnapshotResult
from rewindfs.store.history.files.treestats import tree_stats
from rewindfs.store.history.prune import enforce_max_snapshots
from rewindfs.store.history.signature import signature
from rewindfs.store.history.trailers import compose_message, parse_message
from rewindfs.store.objects import locks, writers
from rewindfs.store.objects.repo import STALE_LOCK_SECONDS, Project, Store, guard_workdir

CAS_ATTEMPTS = 20
MOVED_TRAILER = "Rewind-Moved-From"
# What else a checkpoint records, given the project once it is held and before its files
# are captured: more trailers, and whether they make a checkpoint due though no file
# changed (the project repository's state, store.projectgit).
Recorder = Callable[[Project], tuple[dict[str, str], bool]]
# A test hook: the checkpoint stops itself (SIGSTOP) once its objects are written, before
# its ref first moves, until SIGCONT: how tests run maintenance against a writer in flight.
STOP_FOR_TESTS = "REWIND_TEST_STOP_CHECKPOINT"


def take(
    store: Store,
    workdir,
    reason: str,
    *,
    limits: Limits = DEFAULT_LIMITS,
    trailers: dict[str, str] | None = None,
    extra_excludes: tuple[str, ...] = (),
    allow_empty: bool = False,
    keep: int | None = None,
    recorder: Recorder | None = None,
) -> SnapshotResult:
    """Checkpoint `workdir`. Nothing is written when nothing changed since the tip.

    With `keep`, checkpoints beyond the newest `keep` are pruned (see store.history.prune).
    """
    with locked(store, workdir) as project:
        return take_locked(
            project, reason, limits=limits, trailers=trailers,
            extra_excludes=extra_excludes, allow_empty=allow_empty, keep=keep,
            recorder=recorder,
        )


@contextmanager
def locked(store: Store, workdir, *, create: bool = True) -> Iterator[Project]:
    """The project at `workdir`, held exclusively (threads and processes) for the block.

    The store's writers lock is held (shared) too: an explicit gc waits for the
    block to end before it prunes (see store.objects.writers). Within
    `locks.waiting_at_most`, getting there waits that long at most (Busy: nothing was
    done); once held, the block's own waits are not cut short. `create` False: a store
    or project that is not there (never made, or removed by `rewind clear`) is NotFound,
    never made here.
    """
    wd = guard_workdir(workdir, store.layout)
    store.project(wd, create=create)  # a missing store is created (with its modes) first
    with writers.writing(store.layout):
        # Again: `rewind clear` may have run while we waited.
        project = store.project(wd, create=create)
        wait = locks.patience()
        if not project.mutex.acquire(timeout=-1 if wait is None else wait):
            raise Busy(f"{wd} is being checkpointed or restored by another thread")
        try:
            with project.lock(), locks.waiting_at_most(None):
                yield project
        finally:
            project.mutex.release()


def take_locked(
    project: Project,
    reason: str,
    *,
    limits: Limits = DEFAULT_LIMITS,
    trailers: dict[str, str] | None = None,
    extra_excludes: tuple[str, ...] = (),
    allow_empty: bool = False,
    keep: int | None = None,
    paths: list[bytes] | None = None,
    recorder: Recorder | None = None,
) -> SnapshotResult:
    """`take` for a caller that already holds the project (see `locked`).

    With `paths`, only those are captured afresh; the rest of the tree is as the
    previous capture left it (used for path-scoped pre-rollback snapshots). `recorder`:
    what else the checkpoint records (run first, where Ctrl-C still stops everything).
    """
    store = project.store
    from rewindfs.store.history.redaction import redact  # (writing only)

    reason = redact(reason)  # every reason is kept and may be pushed: no credential in it
    if recorder is not None:
        more, due = recorder(project)
        trailers, allow_empty = {**(trailers or {}), **more}, allow_empty or due
    store.refresh_excludes(project, extra_excludes)
    # Ctrl-C stops the capture at once (nothing recorded); once the capture is done,
    # the commit and ref update are not cut in half.
    with interrupts.deferred():
        cap = capture(project, limits, paths)
        moved = adopt.continue_moved(project, cap.tree_id) if paths is None else None
        if moved is not None:  # a first checkpoint continuing a moved project's history
            trailers, allow_empty = {**(trailers or {}), MOVED_TRAILER: moved.old_workdir}, True
        commit = _commit(project, cap, reason, trailers or {}, allow_empty)
    if commit is not None and keep:
        enforce_max_snapshots(project.repo, store.layout, project.h16, keep)
    projects.touch(store.layout, project.h16, project.workdir)
    return SnapshotResult(
        taken=commit is not None,
        commit=str(commit) if commit is not None else _tip_hex(project),
        project=project.h16,
        workdir=str(project.workdir),
        reason=reason,
        tree=str(cap.tree_id),
        skipped_files=cap.skipped(),
        adopted_from=moved.old_workdir if moved is not None else None,
        sizes=cap.sizes,
        grafted=cap.grafted,
    )


def tip(project: Project) -> pygit2.Commit | None:
    try:
        ref = project.repo.references.get(project.ref)
        return ref.peel(pygit2.Commit) if ref is not None else None
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise StoreError(f"project ref {project.ref} is broken: {exc}") from exc


def _leaves_out_more(parent: pygit2.Commit, left_out: str | None) -> bool:
    """Whether what the project holds and a checkpoint does not changed since `parent`
    (the newest checkpoint must say it, even with the same tree)."""
    _subject, trailers = parse_message(parent.message)
    return leftout.lasting(trailers.get(leftout.LEFT_OUT_TRAILER)) != leftout.lasting(left_out)


def _tip_hex(project: Project) -> str | None:
    head = tip(project)
    return str(head.id) if head is not None else None


def _commit(
    project: Project, cap: Capture, reason: str, trailers: dict[str, str], allow_empty: bool
) -> pygit2.Oid | None:
    repo = project.repo
    left_out = leftout.encode(leftout.entries(cap.skipped(), cap.sizes))
    if left_out is not None:
        trailers = {**trailers, leftout.LEFT_OUT_TRAILER: left_out}
    # A ref lock left by a killed writer is cleared once it is STALE_LOCK_SECONDS old,
    # so waiting on "locked" is bounded by that rather than by the attempt count.
    locked_until = time.monotonic() + STALE_LOCK_SECONDS + 1.0
    attempts = 0
    while attempts < CAS_ATTEMPTS:
        attempts += 1
        ref = repo.references.get(project.ref)
        parent = ref.peel(pygit2.Commit) if ref is not None else None
        if parent is not None and parent.tree_id == cap.tree_id and not allow_empty \
                and not _leaves_out_more(parent, left_out):
            return None
        if parent is None and cap.file_count == 0 and not allow_empty \
                and not leftout.lasting(left_out):
            return None
        # Recorded now, while the parent is at hand, so listing never has to diff.
        change = tree_stats(repo, str(parent.tree_id) if parent else None, str(cap.tree_id),
                            cap.file_count)
        message = compose_message(reason, {**trailers, STATS_TRAILER: change.encode(),
                                           TIME_TRAILER: f"{time.time():.6f}"})
        sig = signature()
        parents = [parent.id] if parent is not None else []
        try:
            oid = repo.create_commit(None, sig, sig, message, cap.tree_id, parents)
        except (pygit2.GitError, OSError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StoreError(f"could not record checkpoint: {detail}") from exc
        if attempts == 1 and os.environ.get(STOP_FOR_TESTS) == "1":
            os.kill(os.getpid(), signal.SIGSTOP)
        lost = refupdate.swap(repo, project.ref, ref, oid, f"checkpoint: {reason}")
        if lost is None:
            return oid
        if lost == refupdate.LOCKED and time.monotonic() < locked_until:
            project.clear_stale_ref_locks()
            attempts -= 1  # bounded by locked_until instead
            time.sleep(0.05)
        elif lost == refupdate.MOVED:
            time.sleep(0.005)  # another writer moved the ref: rebuild on the new tip
        else:
            raise StoreError(f"could not update {project.ref}: its lock file stays")
    raise StoreError(f"could not update {project.ref}: it keeps changing under us")

