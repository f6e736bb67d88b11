"""Reclaiming space: pack what is reachable, delete what is not (git's repack and prune).

libgit2 has no gc, so this runs the git command line (see gitcli). It never runs
on the checkpoint path and takes no project lock; what keeps it safe next to
checkpoints being written at the same moment:

* A grace period. `repack -A --unpack-unreachable=<grace>` keeps unreachable
  objects from recently written packs (as loose objects), and `prune
  --expire=<grace>` deletes only unreachable loose objects older than that. A
  checkpoint writes its blobs, trees and commit as fresh loose objects before its
  ref moves, so none of them is old enough to go; libgit2 refreshes the mtime of
  an existing object it would have written again, which covers reuse.
* Reachability roots beyond refs. Each project's worktree admin dir has an index,
  and git counts every worktree's index as reachable, so files a capture has
  staged but not committed yet are safe even without the grace period. Hermes's
  own indexes (`indexes/<h16>`) are not roots: its in-flight objects rely on the
  grace period alone.
* The prune boundary. `shallow` tells git where each history stops. As their
  very last step, `repack -d` and `prune` rewrite it (dropping entries for
  commits that are gone) under git's `shallow.lock`, and die rather than write
  if the file changed since they read it or the lock is taken.
  `prune.add_boundaries` takes that same lock file, so a boundary moved during a
  gc is never lost; git dying at that point has already done its work, so it is
  not an error here (the next gc tidies the entries). gc itself never holds the
  store's `shallow` flock, nor any project lock.

* Loose-object directories. `repack -d` and `prune` remove fan-out directories
  (`objects/9d/`) they leave empty, while libgit2 writes a loose object by creating
  that directory and then renaming its temporary file into it: a removal in
  between fails the checkpoint. During a gc each fan-out directory holds a
  placeholder file, which git leaves alone (it warns "bad sha1 file" and carries
  on), so none is ever empty; the placeholders go when gc is done.

The residual window is git's own: an unreachable object sitting in an old pack,
reused by a checkpoint after repack has read that pack's mtime, can be dropped.

Two gcs never run at once (a non-blocking flock); readers such as the mount keep
their open packs (libgit2 finds the new pack on the next miss).

An explicit gc (`immediate`: `rewind prune`, the API's explicit prune) frees the
space now instead of after the grace period. Its repack is the same; then it
excludes rewindfs writers (see writers) and prunes every unreachable loose
object, whatever its age: no rewindfs writer is between writing objects and
moving its ref at that moment, and what the repack loosened is loose by then.
Hermes takes no lock rewindfs could wait on (0.19) or holds its own for a whole
checkpoint (current), so while Hermes has checkpointed recently (anything in
`indexes/`, which only Hermes writes, changed within HERMES_WINDOW_MINUTES, the
longest a Hermes checkpoint can take by its git timeouts) objects younger than
that window are kept, and the result says so. If writers never pause long
enough (writers.GIVE_UP), the prune falls back to the grace period.

The pruning to the size cap frees the oldest checkpoints again and again, so its gc
(`reclaim`) costs what it frees, not the store: its repack rewrites only the packs that
hold something unreachable (cleanpacks), and it drops their unreachable objects at once
instead of loosening them for the prune (which compresses each object again, to delete
it moments later: half a minute for a few checkpoints of media files). That is safe
only with no rewindfs writer between writing objects and moving its ref, so the repack
and the prune both run with writers excluded, taken at a moment none is inside
(`free_first` seconds of looking without holding anyone back, then at the gate).
Hermes's objects in flight are loose, which a repack leaves alone; the prune keeps them
as above. Writers that never pause: the explicit mode's grace instead.

A gc killed half way leaves its placeholders behind; `clear_placeholders`
removes them (every sweep calls it), since git fsck reports each as a bad object.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rewindfs.errors import Busy
from rewindfs.store.maintenance.cleanpacks import clean_packs
from rewindfs.store.maintenance.sizes import objects_bytes
from rewindfs.store.objects import gitcli, private, writers
from rewindfs.store.objects.layout import Layout, pack_files
from rewindfs.store.objects.locks import file_lock
from rewindfs.store.objects.verify.checkfiles import remove_commit_graphs

PLACEHOLDER = ".rewindfs-gc"  # not an object name: git walks past it (prune warns)
GRACE_MINUTES = 15.0  # longer than any capture of a project within max_files takes
# Hermes 0.19's longest checkpoint by its git timeouts (60 s each, `add` 120 s): ~9 min.
HERMES_WINDOW_MINUTES = 10.0
# How git dies in its final `shallow` rewrite when a checkpoint moved a boundary meanwhile.
SHALLOW_RACE = ("shallow file has changed since we read it", "shallow.lock': File exists")


@dataclass
class GcResult:
    ran: bool
    bytes_before: int = 0
    bytes_after: int = 0
    seconds: float = 0.0
    # Unreachable objects younger than this many minutes were kept: the grace
    # period, the Hermes window of an explicit gc, or 0 (everything freed now).
    kept_younger_than: float = 0.0
    hermes_active: bool = False  # explicit gc: Hermes checkpointed within its window
    writers_held: float = 0.0  # explicit gc: seconds new checkpoints waited for the prune

    @property
    def reclaimed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)


def expiry(grace_minutes: float) -> str:
    """git's approxidate for "older than the grace period"."""
    seconds = int(grace_minutes * 60)
    return f"{seconds}.seconds.ago" if seconds > 0 else "now"


def gc(layout: Layout, grace_minutes: float = GRACE_MINUTES, *, immediate: bool = False,
       show_progress: bool = False, wait: bool = False) -> GcResult:
    """Repack and prune the store. Raises Busy when another gc runs (unless `wait`).

    `immediate`: prune what is unreachable now, coordinated with writers (see the
    module doc); `grace_minutes` then only bounds what the repack may drop unseen.
    """
    if not (layout.store / "HEAD").exists():
        return GcResult(ran=False)
    start = time.monotonic()
    before = objects_bytes(layout)
    when = expiry(grace_minutes)
    quiet = [] if show_progress else ["-q"]
    result = GcResult(True, before, kept_younger_than=grace_minutes)
    try:
        with file_lock(layout.lock_file("gc"), timeout=None if wait else 0.0):
            _remove_placeholders(layout)
            _keep_states(layout)
            with _fanout_pinned(layout):
                # -n: no update-server-info (nobody fetches from the store over dumb http)
                _run(layout, ["repack", "-A", "-d", "-l", "-n",
                              f"--unpack-unreachable={when}", *quiet], show_progress)
                if immediate:
                    _prune_now(layout, result)
                else:
                    _prune(layout, grace_minutes)
                # A commit-graph (Hermes's `git gc` writes one) naming commits just pruned
                # fails `git fsck` for good; git ignores it in a shallow store anyway.
                remove_commit_graphs(layout)
    except Busy:
        raise Busy("another gc of the checkpoint store is running") from None
    result.bytes_after = objects_bytes(layout)
    result.seconds = time.monotonic() - start
    return result


def _keep_states(layout: Layout) -> None:
    """The repository states of checkpoints gone since go with this gc (repostates)."""
    from rewindfs.store.maintenance.repostates import rebuild_keepers
    from rewindfs.store.objects.repo import Store

    rebuild_keepers(layout, Store(layout).repo)


def _prune(layout: Layout, keep_minutes: float) -> None:
    # prune's output stays captured: it names every placeholder ("bad sha1 file")
    _run(layout, ["prune", f"--expire={expiry(keep_minutes)}", "--no-progress"], False)


def reclaim(layout: Layout, *, free_first: float = 0.0) -> GcResult:
    """Free what nothing reaches now, rewriting only the packs that hold some (the pruning
    to the size cap; see the module doc). Waits for a gc that runs."""
    if not (layout.store / "HEAD").exists():
        return GcResult(ran=False)
    start = time.monotonic()
    result = GcResult(True, objects_bytes(layout))
    with file_lock(layout.lock_file("gc")):
        _remove_placeholders(layout)
        seen = pack_files(layout.store / "objects")
        keep = [f"--keep-pack={name}" for name in clean_packs(layout)]
        with _fanout_pinned(layout):
            try:
                with writers.excluded(layout, free_first=free_first):
                    held = time.monotonic()
                    result.hermes_active = hermes_active(layout)
                    # Packs written since are whole checkpoints now (their writers are
                    # done): kept as they are, not folded into the repack's new pack.
                    keep += [f"--keep-pack={name}" for name in pack_files(layout.store /
                             "objects") if name.endswith(".pack") and name not in seen]
                    _run(layout, ["repack", "-A", "-d", "-l", "-n", "--unpack-unreachable=now",
                                  *keep, "-q"], False)
                    result.kept_younger_than = \
                        HERMES_WINDOW_MINUTES if result.hermes_active else 0.0
                    _prune(layout, result.kept_younger_than)
                    result.writers_held = time.monotonic() - held
            except Busy:  # writers never paused: objects in flight may be young ones
                _run(layout, ["repack", "-A", "-d", "-l", "-n",
                              f"--unpack-unreachable={expiry(GRACE_MINUTES)}", *keep, "-q"],
                     False)
                _prune(layout, GRACE_MINUTES)
                result.kept_younger_than = GRACE_MINUTES
            remove_commit_graphs(layout)
    result.bytes_after = objects_bytes(layout)
    result.seconds = time.monotonic() - start
    return result


def _prune_now(layout: Layout, result: GcResult) -> None:
    """Prune with rewindfs writers held off; keep only what Hermes may have in flight."""
    try:
        with writers.excluded(layout):
            held = time.monotonic()
            result.hermes_active = hermes_active(layout)
            keep = HERMES_WINDOW_MINUTES if result.hermes_active else 0.0
            _prune(layout, keep)
            result.kept_younger_than = keep
            result.writers_held = time.monotonic() - held
    except Busy:
        _prune(layout, result.kept_younger_than)  # writers never paused: the grace it is


def hermes_active(layout: Layout, window_minutes: float = HERMES_WINDOW_MINUTES,
                  now: float | None = None) -> bool:
    """Whether Hermes may have a checkpoint in flight: it touched `indexes/` within the window.

    A Hermes checkpoint writes its project's index (or git's index.lock) before it
    writes any object, and rewindfs never writes there.
    """
    cutoff = (time.time() if now is None else now) - window_minutes * 60
    try:
        with os.scandir(layout.store / "indexes") as entries:
            for entry in entries:
                try:
                    if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                        return True
                except OSError:
                    continue
    except OSError:
        pass
    return False


def clear_placeholders(layout: Layout) -> int:
    """Remove the placeholders a killed gc left behind; returns how many there were.

    Taken under the gc lock, so a running gc's own placeholders are left to it.
    """
    if not (layout.store / "objects").is_dir():
        return 0
    try:
        with file_lock(layout.lock_file("gc"), timeout=0.0):
            return _remove_placeholders(layout)
    except Busy:
        return 0


def _remove_placeholders(layout: Layout) -> int:
    removed = 0
    for pin in _pins(layout):
        removed += private.remove_marker(pin)
    return removed


def _pins(layout: Layout) -> list[Path]:
    objects = layout.store / "objects"
    return [objects / f"{i:02x}" / PLACEHOLDER for i in range(256)]


@contextmanager
def _fanout_pinned(layout: Layout) -> Iterator[None]:
    """Keep every objects/xx/ directory non-empty (so git cannot remove it) for the block."""
    pins = _pins(layout)
    try:
        for pin in pins:
            # Never through a symlink planted at the placeholder's (or its directory's) name.
            private.place_marker(pin)
        yield
    finally:
        for pin in pins:
            private.remove_marker(pin)


def _run(layout: Layout, args: list[str], show_progress: bool) -> None:
    try:
        gitcli.run(layout, args, show_progress=show_progress)
    except gitcli.GitFailed as exc:
        if not any(sign in exc.stderr for sign in SHALLOW_RACE):
            raise
