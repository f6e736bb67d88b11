"""A moved project keeps its history: `rewind adopt OLD NEW`, and the same done automatically.

Everything the store keeps per project is keyed by the hash of its path, so a
project moved elsewhere starts afresh there while its history sits under the old
hash, looking deleted. Adopting re-keys that history to the new path:

* every ref with the old hash as a path component (the checkpoint ref, labels,
  notes, ...) is created under the new hash, then the old one deleted;
* the record moves (created_at and unknown keys kept; last_touch, the parent's
  identity and `moved_from` updated; the quarantine ends);
* every per-project file named by the hash in the store's directories (step log,
  pending actions, ledger, Hermes's index, ...) is renamed; append-only logs the
  new path already has are joined, old entries first;
* the worktree admin dir's files that do not describe the location (the restore
  journal, caches keyed by checkpoint) move into the new one; the old one goes.

Each step leaves the history reachable from at least one ref, so an adoption cut
short loses nothing (`rewind adopt` again, or status, shows what is left).

Automatic detection (`continue_moved`): when a project's very first checkpoint
captures exactly the tree that another project's newest checkpoint holds, and
that project's directory was provably deleted (verdict: deleted or orphan), the
new project is that one, moved: its history is adopted on the spot and the
checkpoint continues it (decided over suggesting: identical trees and a
deleted original leave no doubt worth a question, and the first checkpoint is the
moment it matters). Two candidates, or one whose directory is merely missing (an
unmounted drive), are left alone; `rewind adopt` does it by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pygit2

from rewindfs.errors import Busy, InvalidInput, NotFound, Refused, StoreError
from rewindfs.lazylog import logger
from rewindfs.store.history.chain import walk
from rewindfs.store.history.projects import (
    DELETED_AT,
    list_records,
    parent_identity_keys,
    read_record,
    write_record,
)
from rewindfs.store.history.verdict import workdir_deleted
from rewindfs.store.objects.layout import NOT_PER_PROJECT, Layout, normalize_workdir, project_hash
from rewindfs.store.objects.locks import file_lock, write_atomic
from rewindfs.store.objects.repo import Project, Store, guard_workdir

log = logger(__name__)
# Admin dir files that describe where the project is: Store.project writes them anew.
LOCATION_FILES = {"HEAD", "commondir", "gitdir", "locked", "rewind-config", "exclude"}
LOCK_WAIT = 0.2  # seconds, for the automatic case: a busy old project is not a moved one
MOVED_FROM = "moved_from"


@dataclass
class Adopted:
    old_workdir: str
    new_workdir: str
    old_hash: str
    new_hash: str
    checkpoints: int  # on the adopted chain
    refs: int  # refs moved (checkpoint ref, labels, notes)
    files: int  # per-project files moved


def adopt(store: Store, old: str | os.PathLike[str], new: str | os.PathLike[str]) -> Adopted:
    """Move the history of the project that was at `old` to the directory `new`.

    Refused when `old` is still there, when `new` is no directory a checkpoint may
    be taken of, or when `new` has checkpoints of its own.
    """
    old_wd = normalize_workdir(old)
    if old_wd == normalize_workdir(new):
        raise InvalidInput("OLD_PATH and NEW_PATH are the same directory")
    new_wd = guard_workdir(new)
    if os.path.lexists(old_wd):
        raise Refused(f"{old_wd} still exists: adopt moves the history of a project that was "
                      "moved or deleted")
    layout: Layout = store.layout
    if not store.exists():
        raise NotFound(f"no checkpoints for {old_wd}")
    repo = store.repo
    old_h16, new_h16 = project_hash(old_wd), project_hash(new_wd)
    if repo.references.get(Layout.project_ref(old_h16)) is None:
        raise NotFound(f"no checkpoints for {old_wd}")
    first, second = sorted((old_h16, new_h16))  # one order for every adopter: no deadlock
    try:
        with file_lock(layout.lock_file(first), timeout=5.0), \
                file_lock(layout.lock_file(second), timeout=5.0):
            mine = repo.references.get(Layout.project_ref(new_h16))
            if mine is not None:
                count = len(_chain(repo, new_h16))
                raise Refused(f"{new_wd} already has {count} checkpoint(s) of its own; adopt "
                              f"works before its first one (its history can still be read "
                              f"with: rewind list {old_wd})")
            store.project(new_wd)  # the new admin dir, so files can move into it
            return _move(layout, repo, old_h16, new_h16, old_wd, new_wd)
    except Busy:
        raise Busy("a checkpoint of one of the two projects is in progress; try again") from None


def continue_moved(project: Project, tree_id: pygit2.Oid) -> Adopted | None:
    """Called (holding `project`) with the tree its first checkpoint is about to record:
    adopt the deleted project whose newest checkpoint holds the same tree, if exactly one."""
    repo, layout = project.repo, project.store.layout
    try:
        if repo.references.get(project.ref) is not None:
            return None
        candidates = [r for r in list_records(layout)
                      if r.h16 != project.h16 and _tip_tree(repo, r.h16) == tree_id
                      and workdir_deleted(r)]
        if len(candidates) != 1:
            return None
        old = candidates[0]
        with file_lock(layout.lock_file(old.h16), timeout=LOCK_WAIT):
            again = read_record(layout, old.h16)
            if again is None or not workdir_deleted(again) \
                    or _tip_tree(repo, old.h16) != tree_id:
                return None
            return _move(layout, repo, old.h16, project.h16, old.workdir, project.workdir)
    except (Busy, StoreError, OSError, pygit2.GitError) as exc:
        log.debug("no automatic adoption for %s: %s", project.workdir, exc)
        return None


def _tip_tree(repo: pygit2.Repository, h16: str) -> pygit2.Oid | None:
    try:
        ref = repo.references.get(Layout.project_ref(h16))
        return ref.peel(pygit2.Commit).tree_id if ref is not None else None
    except (pygit2.GitError, KeyError, ValueError):
        return None


def _chain(repo: pygit2.Repository, h16: str) -> list[pygit2.Commit]:
    return walk(repo, Layout.project_ref(h16))


def _move(layout: Layout, repo: pygit2.Repository, old: str, new: str, old_wd: Path,
          new_wd: Path) -> Adopted:
    record = read_record(layout, old)
    data = dict(record.extra) if record else {}
    data.pop(DELETED_AT, None)
    data.update(workdir=str(new_wd), created_at=(record.created_at if record else 0)
                or time.time(), last_touch=time.time(),
                **{MOVED_FROM: [*_list(data.get(MOVED_FROM)), str(old_wd)]})
    data.update(parent_identity_keys(new_wd))
    write_record(layout, new, data)
    renamed = _copy_refs(repo, old, new)
    files = _move_files(layout, old, new, old_wd, new_wd)
    files += _move_admin_files(layout, old, new)
    for name in renamed:
        repo.references.delete(name)
    layout.project_record(old).unlink(missing_ok=True)
    shutil.rmtree(layout.worktree_admin(old), ignore_errors=True)
    return Adopted(str(old_wd), str(new_wd), old, new, len(_chain(repo, new)), len(renamed),
                   files)


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _copy_refs(repo: pygit2.Repository, old: str, new: str) -> list[str]:
    """Create each ref of `old` under `new` (one the new project has already is kept);
    returns the old names, for deletion once everything else has moved."""
    names = [n for n in repo.references if old in n.split("/")]
    for name in names:
        target = repo.references[name].target
        renamed = "/".join(new if part == old else part for part in name.split("/"))
        try:
            repo.references.create(renamed, target, force=False)
        except pygit2.AlreadyExistsError:
            log.info("adopt: %s exists already; %s not moved", renamed, name)
    return names


def _move_files(layout: Layout, old: str, new: str, old_wd: Path, new_wd: Path) -> int:
    moved = 0
    for folder in layout.store.iterdir():
        if folder.name in NOT_PER_PROJECT | {"projects"} or not folder.is_dir():
            continue
        for path in list(folder.iterdir()):
            if not (path.name == old or path.name.startswith(old + ".")) or path.is_dir():
                continue
            target = path.with_name(new + path.name[len(old):])
            if folder.name == "ledgers":  # Hermes's: {absolute path: entry}
                _rebase_ledger(path, old_wd, new_wd)
            if target.exists():
                if path.suffix == ".jsonl":  # append-only logs: old entries first
                    write_atomic(target, path.read_text(encoding="utf-8", errors="surrogateescape")
                                 + target.read_text(encoding="utf-8", errors="surrogateescape"),
                                 errors="surrogateescape")
                path.unlink()
            else:
                os.rename(path, target)
            moved += 1
    return moved


def _rebase_ledger(path: Path, old_wd: Path, new_wd: Path) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    prefix = str(old_wd) + os.sep
    rebased = {str(new_wd) + os.sep + k[len(prefix):] if k.startswith(prefix) else k: v
               for k, v in data.items()}
    write_atomic(path, json.dumps(rebased))


def _move_admin_files(layout: Layout, old: str, new: str) -> int:
    source, target = layout.worktree_admin(old), layout.worktree_admin(new)
    if not source.is_dir() or not target.is_dir():
        return 0
    moved = 0
    for path in source.iterdir():
        if path.name in LOCATION_FILES or path.is_dir() or (target / path.name).exists():
            continue
        os.rename(path, target / path.name)
        moved += 1
    return moved
