"""Capturing a working directory into its project's index and writing the tree.

Two stages, run from here.

Finding what changed (`changes`, `walk`): libgit2 diffs the project's index against the working tree
exactly as its `git_index_add_all` does, honouring every ignore source and comparing
each path's stat data with the index (which persists between checkpoints, so it is a
stat cache); rewindfs walks the resulting changes itself (gitextra) rather than
through add_all, which would also build a patch of every change. Here rewindfs applies
what git has no notion of: the size cap, the max_files guard (what the capture would
leave is counted before any object is written), nested repositories (captured
file by file instead of as gitlinks), directories nested deeper than libgit2 walks,
and places never walked (rewindfs mounts, the store itself).

Storing (`storing`): each file found is read once (`fileread`: what is on disk, or a truthful
"changing"/"unreadable"), hashed and deflated. Many objects go into one new pack
(`packwrite`), trees into another; a few become loose objects. A large capture is
stored on two cores: a forked child stores half of the files into a pack of its own
(`splitstore`). Index entries, with the files' full stat data so the next walk's stat
cache hits without hashing them again, are added only once their objects are on disk;
the ref moves later still (snapshot), so a crash at any point leaves no checkpoint and
no index entry referring to a missing object.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pygit2
from pygit2.ffi import C, ffi

from rewindfs.errors import Refused, StoreError
from rewindfs.store.capture import changes, changesource, deepdirs, graft, interrupts
from rewindfs.store.capture.changes import unreadable_dirs
from rewindfs.store.capture.storing import index_dirs, pack_trees, store_found
from rewindfs.store.capture.tracked import Tracked
from rewindfs.store.capture.walk import Limits, TooManyFiles, Walk
from rewindfs.store.objects import gitextra, heal, indexfile, mounts, omitted
from rewindfs.store.objects.locks import remove_stale_lock, write_atomic
from rewindfs.store.objects.repo import Project


@dataclass
class Capture:
    tree_id: pygit2.Oid
    file_count: int
    # Over the size cap, in the whole project (a capture of a few paths included: omitted)
    oversize: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # directories end with "/"
    changing: list[str] = field(default_factory=list)  # kept changing while read
    too_deep: list[str] = field(default_factory=list)  # directories not descended into
    nested_repos: list[str] = field(default_factory=list)
    # Tracked by git, left out by the person's rules (.rewindignore, secrets: tracked)
    excluded: list[str] = field(default_factory=list)
    git_index: list[str] = field(default_factory=list)  # why git's index was not read
    sizes: dict[str, int] = field(default_factory=dict)  # of the oversize and excluded
    grafted: bool = False  # from a watch's changed paths (graft), not a walk of the tree

    def skipped(self) -> dict[str, list[str]]:
        """What was left out (or kept at its previous version), by reason."""
        kinds = (("oversize", self.oversize), ("excluded", self.excluded),
                 ("unreadable", self.unreadable), ("changing", self.changing),
                 ("too_deep", self.too_deep), ("git_index", self.git_index))
        return {k: v for k, v in kinds if v}


def capture(project: Project, limits: Limits, paths: list[bytes] | None = None) -> Capture:
    """Stage the working tree into the project's index and write its tree object.

    With `paths`, only those files and directories are looked at; every other
    entry stays as the last capture saw it. The caller holds the project lock.
    Raises Refused when the project has more than `limits.max_files` files
    (nothing is written then), or when what it would add takes more than
    `limits.store_cap` (nothing is left in the store then). Ctrl-C stops it within
    moments, index untouched.

    When a watch is registered (changesource) and knows what changed since a capture
    it trusts, only the changed paths are read and grafted onto that capture's tree
    (`_capture_since`): the same tree a walk would give, without walking. Whenever it
    cannot be sure, the walk runs.
    """
    with interrupts.deferred():
        plan = changesource.begin(project, limits)
        cap = None
        if plan is not None and plan.since is not None:
            cap = _capture_since(project, limits, paths, plan.since)
        if cap is None:
            cap = _capture(project, limits, paths)
        if plan is not None and (paths is None or cap.grafted):
            changesource.done(project, plan, limits, cap)
        return cap


def _capture_since(project: Project, limits: Limits, paths: list[bytes] | None,
                   since: graft.Since) -> Capture | None:
    """The capture from `since` (its tree and the paths changed since), or None when
    only a walk can tell: other limits, an ignore file changed, damaged objects to
    write again, or anything failing on the way (the walk then runs and says why)."""
    root = os.fsencode(str(project.workdir))
    scoped = graft.scopes(graft.nested_tops(root, [*since.paths, *(paths or [])]))
    layout = project.store.layout
    if not _same_tree_rules(since.limits, limits) or scoped == [b""] or any(
            p.rpartition(b"/")[2] in graft.IGNORE_FILES for p in scoped):
        return None
    stamp = _IgnoreStamp(project)
    if stamp.changed or not stamp.saved or heal.listed_ids(layout):
        return None
    admin = layout.worktree_admin(project.h16)
    hidden = _hidden_dirs(project)
    rules = _rules(admin, hidden)
    trees = graft.Trees(project.repo)
    index = pygit2.Index()

    def reset() -> None:
        index.clear()
        graft.seed(trees, since.tree, index, scoped)

    try:
        seeded = graft.seed(trees, since.tree, index, scoped)
        with _ignoring(project.repo, rules), _no_gc():
            walk = changes.find(project, index, limits, scoped, rules, hidden, set(), reset,
                                outside=since.count - seeded)
            tracked = Tracked(project, walk, rules)
            if not tracked.unchanged():
                return None  # git's index changed: what it tracks is found by a walk
            walk.too_deep[:0] = deepdirs.still_there(admin, walk.root)
            tracked.add_to_walk(scoped)  # files git tracks that the excludes hid
            # a directory moved in with its own .gitignore: only it is ruled
            ignored = _now_ignored(walk, tracked) if walk.saw_gitignore else []
            changes.check_count(project, walk, limits, ignored)
            changing: list[bytes] = []
            store_found(project, walk, changing)
            for rel in (*walk.oversize, *walk.replaced_by_dir, *ignored):
                if walk.tracked(rel):
                    C.git_index_remove(index._index, rel, 0)
            part = index.write_tree(project.repo).raw
            tree = graft.graft(trees, since.tree, part, scoped)
    except interrupts.Interrupted:
        raise
    except (OSError, pygit2.GitError, ValueError, KeyError, StoreError):
        return None
    tracked.save()
    left = omitted.update(admin, walk.root, scoped, walk.oversize, tracked.excluded)
    decode, kept = os.fsdecode, set(scoped)
    unreadable = [p for p in since.skipped.get("unreadable", [])
                  if not graft.under(os.fsencode(p.rstrip("/")), kept)]
    return Capture(
        tree_id=pygit2.Oid(raw=tree),
        file_count=since.count - seeded + len(index),
        oversize=list(left.get(omitted.OVERSIZE, {})),
        unreadable=sorted(unreadable + [decode(p) for p in walk.unreadable]),
        changing=[decode(p) for p in changing],
        too_deep=[decode(p) + "/" for p in walk.too_deep],
        nested_repos=[decode(p) for p in walk.nested],
        excluded=list(left.get(omitted.EXCLUDED, {})),
        git_index=[tracked.unread] if tracked.unread else [],
        sizes={p: n for found in left.values() for p, n in found.items()},
        grafted=True,
    )


def _same_tree_rules(a: Limits, b: Limits) -> bool:
    """Whether captures under `a` and `b` make the same tree (the store's cap refuses
    a capture, never changes one)."""
    return (a.max_file_size, a.max_files) == (b.max_file_size, b.max_files)


def _capture(project: Project, limits: Limits, paths: list[bytes] | None) -> Capture:
    index = _read_index(project)
    hidden = _hidden_dirs(project)
    admin = project.store.layout.worktree_admin(project.h16)
    rules = _rules(admin, hidden)
    listed = heal.listed_ids(project.store.layout)
    with _ignoring(project.repo, rules), _no_gc():
        walk = changes.find(project, index, limits, paths, rules, hidden, listed)
        walk.too_deep[:0] = deepdirs.still_there(admin, walk.root)
        stamp = _IgnoreStamp(project)
        changing: list[bytes] = []
        tracked = Tracked(project, walk, rules)
        try:
            tracked.add_to_walk(paths)  # files git tracks that the excludes hid
            ignored = (_now_ignored(walk, tracked) if walk.saw_gitignore or stamp.changed
                       else None)
            changes.check_count(project, walk, limits, ignored or [])
            store_found(project, walk, changing)  # a file that kept changing keeps its entry
            for rel in (*walk.oversize, *walk.replaced_by_dir):
                if walk.tracked(rel):
                    C.git_index_remove(index._index, rel, 0)
                    walk.dirty = True
            if ignored is not None:
                for rel in ignored:
                    C.git_index_remove(index._index, rel, 0)
                walk.dirty = True
            interrupts.check()
            known = (pack_trees(project, index, walk.written, walk.damaged)
                     if walk.packed else None)
            if walk.first or walk.packed:
                # A first (or large) checkpoint also looks for directories the walk
                # could not enter. (Files below a directory that became unreadable
                # later are reported one by one, by every checkpoint.)
                known = known if known is not None else index_dirs(index)
                walk.unreadable += unreadable_dirs(walk, known)
            tree_id = index.write_tree()
            if walk.dirty:
                index.write()  # the stat cache; skipped when nothing changed (it is large)
            if listed:
                heal.forget(project.store.layout, listed, walk.written)
        except TooManyFiles:
            index.read(True)
            raise changes.too_many(project, limits) from None
        except (interrupts.Interrupted, Refused):
            index.read(True)  # nothing of it is in the store: neither in the index
            raise
        except (OSError, pygit2.GitError) as exc:
            index.read(True)
            raise StoreError(f"could not write to the checkpoint store: {exc}") from exc
    stamp.save()  # only now: the drop it stands for is in the index on disk
    tracked.save()
    left = omitted.update(admin, walk.root, paths, walk.oversize, tracked.excluded)
    decode = os.fsdecode
    return Capture(
        tree_id=tree_id,
        file_count=len(index),
        oversize=list(left.get(omitted.OVERSIZE, {})),
        unreadable=[decode(p) for p in walk.unreadable],
        changing=[decode(p) for p in changing],
        too_deep=[decode(p) + "/" for p in walk.too_deep],
        nested_repos=[decode(p) for p in walk.nested],
        excluded=list(left.get(omitted.EXCLUDED, {})),
        git_index=[tracked.unread] if tracked.unread else [],
        sizes={p: n for found in left.values() for p, n in found.items()},
    )


def _rules(admin, hidden: list[bytes]) -> list[bytes]:
    """The capture's own ignore rules: directories too deep, and those never entered."""
    return deepdirs.rules(admin) + [r for r in map(deepdirs.literal_rule, hidden) if r]


def ignored_now(project: Project, most: int) -> tuple[list[str], int]:
    """(up to `most` paths, how many in all) in the working tree that the excludes keep
    out of checkpoints: what a `git clean -x` deletes that no checkpoint holds. An ignored
    directory is one path ending with "/" (never walked: node_modules/). The caller holds
    the project lock."""
    admin = project.store.layout.worktree_admin(project.h16)
    index = _read_index(project)
    found: list[str] = []
    count = 0
    with _ignoring(project.repo, _rules(admin, _hidden_dirs(project))), \
            gitextra.index_to_workdir(project.repo, index, [], ignored=True) as deltas:
        for delta in deltas:
            if delta.status == gitextra.IGNORED:
                count += 1
                if len(found) < most:
                    found.append(os.fsdecode(ffi.string(delta.old_file.path)))
    return found, count


@contextmanager
def _no_gc() -> Iterator[None]:
    """Python's cycle collector off while a capture allocates an object or two per file
    (it would traverse them all again and again); nothing here makes cycles."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _hidden_dirs(project: Project) -> list[bytes]:
    """Directories inside the project a capture never enters: rewindfs mounts (their
    checkpoints are not project content) and the checkpoint store itself."""
    root = os.fsencode(str(project.workdir))
    points = mounts.rewindfs_mounts()
    base = project.store.layout.base
    points.append(os.fsencode(str(base.resolve() if base.exists() else base)))
    return mounts.under(root, points)


@contextmanager
def _ignoring(repo: pygit2.Repository, rules: list[bytes]) -> Iterator[None]:
    """`rules` in force for the walk of this handle, and only for it."""
    gitextra.add_ignore_rules(repo, rules)
    try:
        yield
    finally:
        if rules:
            gitextra.clear_ignore_rules(repo)


def _read_index(project: Project) -> pygit2.Index:
    """The project's index, loaded; a damaged one is only a stat cache: start afresh."""
    admin = project.store.layout.worktree_admin(project.h16)
    # We hold the project lock, so an index.lock now is a killed process's.
    remove_stale_lock(admin / "index.lock", 0.0)
    if indexfile.could_hold_its_entries(admin / "index"):
        try:
            index = project.repo.index
            index.read(False)
            return index
        except pygit2.GitError:
            pass
    try:
        os.unlink(admin / "index")
    except FileNotFoundError:
        pass
    index = project.repo.index
    index.read(True)
    return index


class _IgnoreStamp:
    """Whether exclude files changed since the last capture (their mtime and size).

    The index keeps every file it once captured, so when the rules change, files they
    now ignore (a freshly excluded .env, say) must be dropped explicitly. A changed
    .gitignore is seen by the walk itself (`saw_gitignore`).
    """

    def __init__(self, project: Project):
        admin = project.store.layout.worktree_admin(project.h16)
        self.file = admin / "ignore-stamp"
        parts = []
        for path in (admin / "exclude", project.store.layout.store / "info" / "exclude"):
            try:
                st = os.stat(path)
                parts.append(f"{st.st_mtime_ns}:{st.st_size}")
            except OSError:
                parts.append("-")
        self.current = " ".join(parts)
        try:
            self.saved = self.file.read_text()
        except OSError:
            self.saved = ""

    @property
    def changed(self) -> bool:
        return self.saved != "" and self.saved != self.current  # a first capture has no past

    def save(self) -> None:
        if self.saved != self.current:
            write_atomic(self.file, self.current)  # 0600, never through a planted link


def _now_ignored(walk: Walk, tracked: Tracked) -> list[bytes]:
    """Entries the excludes now leave out (dropped once the rest is stored), less those
    git tracks and the person's rules keep."""
    gone = [p for p in (os.fsencode(e.path) for e in walk.index) if walk.ignored(p)]
    kept = tracked.keeping(gone)
    return [p for p in gone if p not in kept]
