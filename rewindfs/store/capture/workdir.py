"""Capturing a working directory into its project's index and writing the tree.

Two stages, run from here.

Finding what changed (`changes`, `walk`): libgit2 diffs the project's index against the working tree
exactly as its `git_index_add_all` does, honouring every ignore source and comparing
each path's stat data with the index (which persists between checkpoints, so it is a
stat cache); rewindfs walks the resulting changes itself (gitextra) rather than
through add_all, which would also build a patch of every change. Here rewindfs applies
what git has no notion of: the size cap, the max_files guard (the walk stops as soon as
the count is exceeded, before any object is written), nested repositories (captured
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
from pygit2.ffi import C

from rewindfs.errors import Refused, StoreError
from rewindfs.store.capture import changes, deepdirs, interrupts
from rewindfs.store.capture.changes import unreadable_dirs
from rewindfs.store.capture.storing import index_dirs, pack_trees, store_found
from rewindfs.store.capture.walk import Limits, Walk
from rewindfs.store.objects import gitextra, heal, indexfile, mounts
from rewindfs.store.objects.locks import remove_stale_lock, write_atomic
from rewindfs.store.objects.repo import Project


@dataclass
class Capture:
    tree_id: pygit2.Oid
    file_count: int
    oversize: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # directories end with "/"
    changing: list[str] = field(default_factory=list)  # kept changing while read
    too_deep: list[str] = field(default_factory=list)  # directories not descended into
    nested_repos: list[str] = field(default_factory=list)

    def skipped(self) -> dict[str, list[str]]:
        """What was left out (or kept at its previous version), by reason."""
        kinds = (("oversize", self.oversize), ("unreadable", self.unreadable),
                 ("changing", self.changing), ("too_deep", self.too_deep))
        return {k: v for k, v in kinds if v}


def capture(project: Project, limits: Limits, paths: list[bytes] | None = None) -> Capture:
    """Stage the working tree into the project's index and write its tree object.

    With `paths`, only those files and directories are looked at; every other
    entry stays as the last capture saw it. The caller holds the project lock.
    Raises Refused when the project has more than `limits.max_files` files
    (nothing is written then), or when what it would add takes more than
    `limits.store_cap` (nothing is left in the store then). Ctrl-C stops it within
    moments, index untouched.
    """
    with interrupts.deferred():
        return _capture(project, limits, paths)


def _capture(project: Project, limits: Limits, paths: list[bytes] | None) -> Capture:
    index = _read_index(project)
    hidden = _hidden_dirs(project)
    admin = project.store.layout.worktree_admin(project.h16)
    rules = deepdirs.rules(admin) + [r for r in map(deepdirs.literal_rule, hidden) if r]
    listed = heal.listed_ids(project.store.layout)
    with _ignoring(project.repo, rules), _no_gc():
        walk = changes.find(project, index, limits, paths, rules, hidden, listed)
        walk.too_deep[:0] = deepdirs.still_there(admin, walk.root)
        changing: list[bytes] = []
        try:
            store_found(project, walk, changing)  # a file that kept changing keeps its entry
            for rel in (*walk.oversize, *walk.replaced_by_dir):
                if walk.tracked(rel):
                    C.git_index_remove(index._index, rel, 0)
                    walk.dirty = True
            stamp = _IgnoreStamp(project)
            if walk.saw_gitignore or stamp.changed:
                _drop_now_ignored(walk)
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
        except (interrupts.Interrupted, Refused):
            index.read(True)  # nothing of it is in the store: neither in the index
            raise
        except (OSError, pygit2.GitError) as exc:
            index.read(True)
            raise StoreError(f"could not write to the checkpoint store: {exc}") from exc
    stamp.save()  # only now: the drop it stands for is in the index on disk
    decode = os.fsdecode
    return Capture(
        tree_id=tree_id,
        file_count=len(index),
        oversize=[decode(p) for p in walk.oversize],
        unreadable=[decode(p) for p in walk.unreadable],
        changing=[decode(p) for p in changing],
        too_deep=[decode(p) + "/" for p in walk.too_deep],
        nested_repos=[decode(p) for p in walk.nested],
    )


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


def _drop_now_ignored(walk: Walk) -> None:
    gone = [entry.path for entry in walk.index if walk.ignored(os.fsencode(entry.path))]
    for path in gone:
        C.git_index_remove(walk.index._index, os.fsencode(path), 0)
