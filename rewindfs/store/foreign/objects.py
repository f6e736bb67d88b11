"""Another agent's snapshot objects (Kilo Code, OpenCode), read without ever writing there.

The repository is opened as an object database only: libgit2 gets each objects
folder's packs and loose objects and nothing else, so it reads no config, no
refs, no index and no working tree of the other agent's repository, and nothing
here has a way to write to it. The folders are the snapshot git dir's own, every
folder its `objects/info/alternates` names (OpenCode >= 1.17.4 keeps objects only in
the project's `.git/objects` that way), and any extra ones the caller adds (the
project's `.git/objects` where it lives now, when it moved since; the other snapshot
dirs of the same project).

Snapshots stay loose objects for long (OpenCode never pins them, so its gc leaves
them loose for their whole 7 days), one small file per object: read cold, listing a
directory is one random disk read per file for its size. `prefetch` has the kernel
read a directory's objects ahead all at once, from a few threads, so the disk serves
them together instead of one after another.

An object that is missing is *gone* (the agent's `git gc` pruned it): `exists`
says so without an error, and reads raise NotFound. Each thread gets its own
handle (libgit2 handles are not shared across threads); a read that misses is
retried once on a fresh handle, since the agent's gc may have repacked meanwhile.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pygit2
from pygit2.enums import FileMode

from rewindfs.errors import NotFound
from rewindfs.store.objects import odbguard

T = TypeVar("T")
MAX_ALTERNATE_DEPTH = 5  # as git and libgit2
_MISSING = (KeyError, pygit2.GitError, ValueError)
PREFETCH_THREADS = 8  # opens in flight at once: a disk serves a queue faster than one read
_prefetcher: ThreadPoolExecutor | None = None
_prefetcher_lock = threading.Lock()


def object_folders(objects: Iterable[Path]) -> list[Path]:
    """Each folder, then the alternates it names (recursively, each once), existing ones only."""
    out: list[Path] = []
    seen: set[str] = set()

    def visit(folder: Path, depth: int) -> None:
        key = os.path.normpath(str(folder))
        if key in seen or depth > MAX_ALTERNATE_DEPTH or not folder.is_dir():
            return
        seen.add(key)
        out.append(Path(key))
        for line in _alternates(folder):
            target = Path(line)
            visit(target if target.is_absolute() else folder / target, depth + 1)

    for folder in objects:
        visit(folder, 0)
    return out


def named_alternates(objects: Path) -> list[Path]:
    """The folders `objects/info/alternates` names, whether or not they exist (a moved
    project leaves them pointing at its old place)."""
    return [Path(line) if os.path.isabs(line) else objects / line
            for line in _alternates(objects)]


def _alternates(folder: Path) -> list[str]:
    try:
        text = (folder / "info" / "alternates").read_text(encoding="utf-8",
                                                          errors="surrogateescape")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.startswith("#")]


class ForeignObjects:
    """Read-only objects of one agent project's snapshots, safe to use from many threads."""

    def __init__(self, objects: Iterable[Path]):
        self.folders = object_folders(objects)
        self._local = threading.local()
        self._generation = 0

    @property
    def repo(self) -> pygit2.Repository:
        """This thread's handle: a repository that is nothing but the object database."""
        local = self._local
        if getattr(local, "generation", None) != self._generation or local.repo is None:
            local.repo = _open(self.folders)
            local.generation = self._generation
        return local.repo

    def reopen(self) -> None:
        """Every thread opens afresh on its next read (the agent's gc repacked)."""
        self._generation += 1

    def exists(self, oid: str) -> bool:
        try:
            if oid in self.repo.odb:
                return True
            self._local.repo = None  # a repack may have moved it: look again
            return oid in self.repo.odb
        except _MISSING:
            return False

    def read(self, what: str, fn: Callable[[pygit2.Repository], T]) -> T:
        """fn(repo), retried once on a fresh handle; NotFound ("gone") when it still misses."""
        try:
            return fn(self.repo)
        except _MISSING:
            self._local.repo = None
        try:
            return fn(self.repo)
        except _MISSING as exc:
            raise NotFound(f"{what} is gone from the agent's snapshots (pruned by its git gc)") \
                from exc

    def blob(self, oid: str, size: int = 0) -> bytes:
        return self.read(f"file {oid[:8]}", lambda repo: repo.odb.read(oid)[1])

    def prefetch(self, tree_id: str) -> None:
        """Have the kernel read ahead the loose files of everything the tree names (its
        files and subdirectories), all at once; waits only for the opens. Packed objects
        and a tree that is gone are left alone: this only ever saves time."""
        try:
            tree = self.repo[tree_id]
        except _MISSING:
            return
        if not isinstance(tree, pygit2.Tree) or len(tree) < 2:
            return
        # (A gitlink names a commit of another repository: nothing to read.)
        oids = [str(entry.id) for entry in tree if entry.filemode != FileMode.COMMIT]
        chunks = [oids[i::PREFETCH_THREADS] for i in range(PREFETCH_THREADS)]
        list(_pool().map(lambda chunk: _read_ahead(self.folders, chunk), chunks))

    def raw(self, oid: str) -> tuple[int, bytes]:
        """(git object type, content) of any object."""
        return self.read(f"object {oid[:8]}", lambda repo: repo.odb.read(oid)[:2])


def _pool() -> ThreadPoolExecutor:
    global _prefetcher
    with _prefetcher_lock:
        if _prefetcher is None:
            _prefetcher = ThreadPoolExecutor(PREFETCH_THREADS, "rewind-prefetch")
        return _prefetcher


def _read_ahead(folders: list[Path], oids: list[str]) -> None:
    for oid in oids:
        for folder in folders:
            try:
                fd = os.open(f"{folder}/{oid[:2]}/{oid[2:]}",
                             os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue  # packed, gone, or in another folder
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass
            finally:
                os.close(fd)
            break


def _open(folders: list[Path]) -> pygit2.Repository:
    odb = pygit2.Odb()
    guarded = odbguard.guarded()
    for priority, folder in enumerate(reversed(folders), start=1):
        # Priorities as libgit2 gives its own backends: packs before loose objects.
        odb.add_backend(pygit2.OdbBackendPack(str(folder)), 2 * priority + 1)
        loose = odbguard.VerifiedLoose(folder) if guarded \
            else pygit2.OdbBackendLoose(str(folder), -1, False)
        odb.add_backend(loose, 2 * priority)
    repo = pygit2.Repository()
    repo.set_odb(odb)
    return repo
