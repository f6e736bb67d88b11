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
CRAWL_TREES = 5_000  # trees read ahead below one listed directory
MAX_ADVISED = 100_000  # trees remembered as read ahead (then forgotten all at once)
BELOW = "rewind-prefetch-below"  # the threads reading ahead below a listed tree
_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


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
        self._advised: set[str] = set()  # trees whose objects were asked for below a listing
        self._planned: set[str] = set()  # trees the walk below a listing has on its way
        self._crawl = 0  # the walk below a listed tree under way (an older one stops)
        self._crawl_lock = threading.Lock()

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
        files and subdirectories), all at once; waits only for the opens. Then, in the
        background, those of every tree below it, depth first in listing order (where
        the mount's readers and its own read-ahead go next), without waiting: the disk
        gets a long queue. A tree that walk asked for already is not asked again; one
        outside it starts a new walk there. Packed objects and a tree that is gone are
        left alone: this only ever saves time."""
        tree = self._tree(tree_id)
        if tree is None:
            return
        with self._crawl_lock:
            advised, planned = tree_id in self._advised, tree_id in self._planned
            if not planned:
                self._crawl += 1
                crawl = self._crawl
        # (A gitlink names a commit of another repository: nothing to read.)
        oids = [str(entry.id) for entry in tree if entry.filemode != FileMode.COMMIT]
        if not advised and len(oids) > 1:
            chunks = [oids[i::PREFETCH_THREADS] for i in range(PREFETCH_THREADS)]
            list(_pool().map(lambda chunk: _read_ahead(self.folders, chunk), chunks))
        below = [str(e.id) for e in tree if e.filemode == FileMode.TREE]
        if not planned and below:
            self._plan(below)
            threading.Thread(target=self._walk_below, args=(crawl, below[::-1]),
                             daemon=True, name=BELOW).start()

    def _tree(self, tree_id: str) -> pygit2.Tree | None:
        """The tree `tree_id` names, or None when it is gone or is no tree."""
        try:
            tree = self.repo[tree_id]
        except _MISSING:
            return None
        return tree if isinstance(tree, pygit2.Tree) else None

    def stop(self) -> None:
        """End the read-ahead below a listed tree (the mount is going)."""
        with self._crawl_lock:
            self._crawl += 1

    def _walk_below(self, crawl: int, stack: list[str]) -> None:
        for _ in range(CRAWL_TREES):
            if not stack or crawl != self._crawl:
                return
            tree_id = stack.pop()
            with self._crawl_lock:
                if tree_id in self._advised:
                    continue
                self._advised.add(tree_id)
            _read_ahead(self.folders, [tree_id], whole=True)  # here, not under the GIL
            tree = self._tree(tree_id)
            if tree is None:
                continue
            oids = [str(e.id) for e in tree
                    if e.filemode not in (FileMode.COMMIT, FileMode.TREE)]
            for i in range(0, len(oids), 4):
                _pool(BELOW).submit(_read_ahead, self.folders, oids[i:i + 4])
            below = [str(e.id) for e in tree if e.filemode == FileMode.TREE]
            self._plan(below)
            stack += below[::-1]

    def _plan(self, trees: list[str]) -> None:
        with self._crawl_lock:
            if len(self._planned) + len(self._advised) >= MAX_ADVISED:
                self._planned.clear()
                self._advised.clear()
            self._planned.update(trees)

    def raw(self, oid: str) -> tuple[int, bytes]:
        """(git object type, content) of any object."""
        return self.read(f"object {oid[:8]}", lambda repo: repo.odb.read(oid)[:2])


def _pool(name: str = "rewind-prefetch") -> ThreadPoolExecutor:
    """The threads opening objects for a listed tree, or (another name) below it."""
    with _pools_lock:
        if name not in _pools:
            _pools[name] = ThreadPoolExecutor(PREFETCH_THREADS, name)
        return _pools[name]


def _read_ahead(folders: list[Path], oids: list[str], whole: bool = False) -> None:
    """Ask the kernel for these loose objects (`whole`: read them here, and wait)."""
    for oid in oids:
        for folder in folders:
            try:
                fd = os.open(f"{folder}/{oid[:2]}/{oid[2:]}",
                             os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue  # packed, gone, or in another folder
            try:
                if whole:
                    while os.read(fd, 65536):
                        pass
                else:
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
