"""Removing one project: every ref and file of the store that belongs to it.

What belongs to a project is found by its hash rather than listed here, so data
other modules add per project is removed too: every ref with `<h16>` as a path
component (`refs/hermes/<h16>`, `refs/rewind/labels/<h16>/*`, notes, ...), the
worktree admin dir, and every file named `<h16>` or `<h16>.*` in the store's own
directories (Hermes's `indexes/`, `projects/`, `ledger/`, step logs, ...). Lock
files stay: another process may be waiting on one, and an unlinked lock file
would let two holders in.

The refs go first and the record last, so a removal cut short leaves a record
the next sweep finds and finishes, never history without a record (which no
listing would show and no sweep would find). Objects are left to gc: they may be
shared with other projects.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pygit2

from rewindfs.errors import Busy, StoreError
from rewindfs.store.history.projects import ProjectRecord, read_record
from rewindfs.store.objects.layout import NOT_PER_PROJECT, REMOTES_PREFIX, Layout
from rewindfs.store.objects.locks import file_lock

LOCK_WAIT = 0.2  # seconds; a project whose lock is held longer is in use: leave it


def remove_project(layout: Layout, repo: pygit2.Repository, h16: str,
                   still_removable: Callable[[ProjectRecord], bool]) -> bool:
    """Remove project `h16` if `still_removable(record)` holds under its lock. True if removed.

    The verdict is taken again under the project lock, right before deleting, so a
    project a checkpoint touched since it was judged is kept; a project whose lock
    is busy (a checkpoint in progress) is kept too.
    """
    try:
        with file_lock(layout.lock_file(h16), timeout=LOCK_WAIT):
            record = read_record(layout, h16)
            if record is None or not still_removable(record):
                return False
            _delete_refs(repo, h16)
            shutil.rmtree(layout.worktree_admin(h16), ignore_errors=True)
            for path in _project_files(layout, h16):
                path.unlink(missing_ok=True)
            layout.project_record(h16).unlink(missing_ok=True)
            return True
    except Busy:
        return False


def _delete_refs(repo: pygit2.Repository, h16: str) -> None:
    """The project's own refs: never what was fetched from a remote under the same path
    hash (another machine's copy of that path, or the mirror of what this store pushed,
    which `push --prune` needs to remove the project from the remote)."""
    for name in [n for n in repo.references
                 if h16 in n.split("/") and not n.startswith(REMOTES_PREFIX)]:
        ref = repo.references.get(name)
        if ref is None:
            continue
        try:
            ref.delete()  # libgit2 refuses if the ref moved since it was read
        except pygit2.GitError as exc:
            raise StoreError(f"could not delete {name}: {exc}") from exc


def _project_files(layout: Layout, h16: str) -> Iterator[Path]:
    """Files of the project in the store's directories, the record excepted (it goes last)."""
    record = layout.project_record(h16)
    for folder in layout.store.iterdir():
        if folder.name in NOT_PER_PROJECT or not folder.is_dir():
            continue
        for path in folder.iterdir():
            if (path.name == h16 or path.name.startswith(h16 + ".")) and path != record \
                    and not path.is_dir():
                yield path
