"""Read-only access to the store for browsing it as files (the FUSE mount's only door to git).

A mount lives for hours while checkpoints are taken, pruned and `git gc` repacks
the store, and it serves requests from several threads at once. So this module:

* gives each thread its own repository handle (libgit2 handles are not meant to
  be shared between threads);
* retries a read once on a fresh handle when an object or pack went missing
  (a repack moved it), and only then reports it gone;
* drops every handle when the pack directory changes, so packs deleted by gc are
  not held open (and their disk space kept) for the life of the mount;
* has git read big blobs in its own process (store.objects.catfile), because pygit2
  holds the GIL for the whole of one object read.

Everything here returns plain Python values (hex ids, bytes, ints) so callers
never see pygit2.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypeVar

import pygit2
from pygit2.enums import FileMode, RepositoryOpenFlag

from rewindfs.errors import NotFound, StoreError
from rewindfs.store.history import projects
from rewindfs.store.history.chain import Checkpoint, checkpoints
from rewindfs.store.history.files.trees import unsafe_name
from rewindfs.store.history.metadata import notes
from rewindfs.store.objects import damage, odbguard
from rewindfs.store.objects.catfile import BlobPipe
from rewindfs.store.objects.layout import LABELS_PREFIX, REFS_PREFIX, Layout, split_remote_ref

T = TypeVar("T")
PIPE_SIZE = 256 * 1024  # holding the GIL for a read of this size costs ~2 ms
_MISSING = (KeyError, pygit2.GitError, ValueError)


class EntryKind(Enum):
    DIRECTORY = "directory"
    FILE = "file"
    SYMLINK = "symlink"
    SUBMODULE = "submodule"  # a gitlink: git archive and checkout show an empty directory


@dataclass(frozen=True)
class TreeEntry:
    """One name in a stored directory. `size` is the blob's length (0 for directories)."""

    name: bytes
    kind: EntryKind
    executable: bool
    oid: str
    size: int


@dataclass(frozen=True)
class ProjectTip:
    """A project with checkpoints: hash, working directory (if recorded), newest commit."""

    h16: str
    workdir: Path | None
    tip: str


class ObjectReader:
    """Trees and blobs for the mount from one object database: subclasses say how a read
    is done (`_read`: retried, errors named) and which git process reads big blobs."""

    _pipe: BlobPipe
    # Blob sizes by id: a directory is listed with its predecessors (the mount shows
    # when a file's bytes were recorded), and they share most blobs, whose sizes would
    # each cost a read of the object's header (a disk read into the pack when cold).
    _sizes: BlobSizes

    def _read(self, what: str, fn: Callable[[pygit2.Repository], T]) -> T:
        raise NotImplementedError

    def new_pipe(self) -> BlobPipe:
        """A git process of its own for reading blobs (one per reader of big blobs)."""
        raise NotImplementedError

    def tree(self, tree_id: str) -> list[TreeEntry]:
        """The entries of a stored directory, with blob sizes (read from object headers)."""

        def read(repo: pygit2.Repository) -> list[TreeEntry]:
            tree = repo[tree_id]
            if not isinstance(tree, pygit2.Tree):
                raise KeyError(tree_id)
            return entries_of(repo, tree, self._sizes)

        return self._read(f"directory {tree_id[:8]}", read)

    def blob(self, oid: str, size: int = 0) -> bytes:
        """A blob's whole content (libgit2 has no partial read); `size` as listed.

        Read straight from the object database: looking the object up first would
        inflate it twice. A blob of PIPE_SIZE or more is read by git in its own
        process (see store.objects.catfile), so this thread does not hold the GIL meanwhile.
        """
        if size >= PIPE_SIZE:
            try:
                return self._pipe.read(oid)
            except KeyError:
                self._pipe.close()  # a repack may have moved it: libgit2 looks again below
            except (OSError, StoreError):
                pass  # no usable git: libgit2 reads it
        return self._read(f"file {oid[:8]}", lambda repo: repo.odb.read(oid)[1])

    def copy_blob(self, oid: str, sink: Callable[[bytes], object]) -> int:
        """Hand a big blob to `sink` piece by piece (never whole in memory); its size.

        Through git (store.objects.catfile); a blob git cannot find is asked again of a new git
        process (a repack may have moved it), and only without a usable git is it read
        whole by libgit2.
        """
        fed = [False]

        def feed(data: bytes) -> None:
            fed[0] = True
            sink(data)

        for attempt in range(2):
            try:
                return self._pipe.copy(oid, feed)
            except KeyError:
                self._pipe.close()
                if attempt:
                    raise NotFound(f"file {oid[:8]} is no longer in the store") from None
            except (OSError, StoreError):
                if fed[0]:
                    raise
                break
        data = self._read(f"file {oid[:8]}", lambda repo: repo.odb.read(oid)[1])
        sink(data)
        return len(data)


class StoreBrowser(ObjectReader):
    """Thread-safe, read-only view of the checkpoint store under `layout`."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self._pipe = BlobPipe(layout)
        self._local = threading.local()
        self._generation = 0
        self._packs_seen: float | None = None
        self._guard = threading.Lock()
        self._sizes = BlobSizes()

    # -- handles -----------------------------------------------------------------

    def exists(self) -> bool:
        return (self.layout.store / "HEAD").exists()

    def reopen(self) -> None:
        """Make every thread open a fresh handle on its next read (and the big-blob
        reader a fresh git process), so deleted packs are not held open."""
        with self._guard:
            self._generation += 1
        self._pipe.close()

    def close(self) -> None:
        """Let go of the git process big blobs are read through (pygit2 handles go
        with their threads)."""
        self._pipe.close()

    def notice_repack(self) -> None:
        """Reopen when the pack directory changed since last asked (cheap: one stat)."""
        try:
            mtime = os.stat(self.layout.store / "objects" / "pack").st_mtime
        except OSError:
            return
        if self._packs_seen is not None and mtime != self._packs_seen:
            self.reopen()
        self._packs_seen = mtime

    def _repo(self) -> pygit2.Repository:
        local = self._local
        if getattr(local, "generation", None) != self._generation or local.repo is None:
            old = getattr(local, "repo", None)
            if old is not None:
                old.free()
            local.repo = None
            local.generation = self._generation
            if not self.exists():
                raise NotFound(f"no checkpoint store at {self.layout.store}")
            try:
                local.repo = pygit2.Repository(str(self.layout.store), RepositoryOpenFlag.NO_SEARCH)
                odbguard.install(local.repo, self.layout.store / "objects")
            except _MISSING as exc:
                raise StoreError(f"checkpoint store at {self.layout.store} is unreadable: {exc}") \
                    from exc
        return local.repo

    def _read(self, what: str, fn: Callable[[pygit2.Repository], T]) -> T:
        """fn(repo), retried once on a fresh handle: a repack may have moved the object.

        Then an object that is damaged (or missing from a tree that names it) is
        StoreDamaged, which the mount answers with EIO for that one file or directory;
        anything else is NotFound (ENOENT).
        """
        try:
            return fn(self._repo())
        except _MISSING:
            self._local.repo = None
        try:
            return fn(self._repo())
        except _MISSING as exc:
            found = damage.explain(self.layout, exc, scan=False)
            if found is not None:
                raise found from exc
            raise NotFound(f"{what} is no longer in the store") from exc

    # -- projects and checkpoints ------------------------------------------------

    def projects(self) -> list[ProjectTip]:
        """Every project with a checkpoint ref, orphans (no record) included."""
        if not self.exists():
            return []

        def tips(repo: pygit2.Repository) -> list[tuple[str, str]]:
            out = []
            for ref in repo.references.iterator():
                if ref.name.startswith(REFS_PREFIX):
                    try:
                        out.append((ref.name[len(REFS_PREFIX):], str(ref.resolve().target)))
                    except _MISSING:
                        continue  # a ref being rewritten right now: seen on the next refresh
            return out

        result = []
        for h16, tip in self._read("the project list", tips):
            record = projects.read_record(self.layout, h16)
            result.append(ProjectTip(h16, record.workdir if record else None, tip))
        return result

    def read(self, what: str, fn: Callable[[pygit2.Repository], T]) -> T:
        """fn(repo) on this thread's handle, retried and reported as every read here (for
        readers in the rooms above, e.g. the projects fetched from remotes)."""
        if not self.exists():
            raise NotFound(f"no checkpoint store at {self.layout.store}")
        return self._read(what, fn)

    def signatures(self) -> dict[str, tuple]:
        """h16 (or a fetched project's key) -> what its checkpoint list is made of (tip,
        labels, prune boundaries), for every project: equal signatures, equal lists. One
        pass over the refs, so a watcher can ask every second and re-read only the
        projects that changed."""
        if not self.exists():
            return {}
        try:
            st = os.stat(self.layout.store / "shallow")
            shallow: tuple = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            shallow = ()

        def read(repo: pygit2.Repository) -> dict[str, list]:
            found: dict[str, list] = {}
            for ref in repo.references.iterator():
                name = ref.name
                if name.startswith(REFS_PREFIX):
                    h16, what = name[len(REFS_PREFIX):], "tip"
                elif name.startswith(LABELS_PREFIX):
                    h16, _, what = name[len(LABELS_PREFIX):].partition("/")
                elif (fetched := split_remote_ref(name)) is not None:
                    h16, what = "/".join(fetched[:3]), fetched[3]
                else:
                    continue
                try:
                    target = str(ref.resolve().target)
                except _MISSING:
                    target = "?"
                found.setdefault(h16, []).append((what, target))
            return found

        return {h16: (shallow, *sorted(parts))
                for h16, parts in self._read("the project list", read).items()}

    def tip(self, h16: str) -> str | None:
        """The newest checkpoint of the project, or None when it has none."""
        if not self.exists():
            return None

        def read(repo: pygit2.Repository) -> str | None:
            ref = repo.references.get(Layout.project_ref(h16))
            return str(ref.resolve().target) if ref is not None else None

        try:
            return self._read(f"project {h16}", read)
        except NotFound:
            return None

    def checkpoints(self, h16: str) -> list[Checkpoint]:
        """The project's checkpoints, numbered like `rewind list` (1 = newest)."""
        if not self.exists():
            return []
        return self._read(f"history of {h16}", lambda repo: checkpoints(repo, h16))

    def note(self, h16: str, commit: str) -> dict | None:
        """The checkpoint's note (agent state and external actions, see
        store.history.metadata.notes)."""
        return self._read(f"metadata of {commit[:8]}", lambda repo: notes.read(repo, h16, commit))

    # -- trees and blobs ---------------------------------------------------------

    def new_pipe(self) -> BlobPipe:
        return BlobPipe(self.layout)

    def owner(self) -> tuple[int, int]:
        """uid and gid of the store (the person whose checkpoints these are)."""
        try:
            st = os.stat(self.layout.store)
        except OSError:
            return os.getuid(), os.getgid()
        return st.st_uid, st.st_gid


class BlobSizes(dict):
    """Blob id -> size; emptied when full (it only saves reads)."""

    LIMIT = 500_000  # ~80 MiB at most

    def remember(self, oid: pygit2.Oid, size: int) -> None:
        if len(self) >= self.LIMIT:
            self.clear()
        self[oid] = size


def entries_of(repo: pygit2.Repository, tree: pygit2.Tree, sizes: BlobSizes) -> list[TreeEntry]:
    """A stored name that must never be a path component (`..`, one holding `/`, `.git`;
    see store.history.files.trees.unsafe_name: a tree is data, not trust) is left out."""
    odb = repo.odb
    out = []
    for entry in tree:
        if unsafe_name(entry.raw_name) is not None:
            continue
        mode = entry.filemode
        if mode == FileMode.TREE:
            out.append(TreeEntry(entry.raw_name, EntryKind.DIRECTORY, True, str(entry.id), 0))
        elif mode == FileMode.COMMIT:
            out.append(TreeEntry(entry.raw_name, EntryKind.SUBMODULE, True, str(entry.id), 0))
        else:
            kind = EntryKind.SYMLINK if mode == FileMode.LINK else EntryKind.FILE
            oid = entry.id
            size = sizes.get(oid)
            if size is None:
                try:
                    size = odb.read_header(oid)[1]
                    sizes.remember(oid, size)
                except _MISSING:
                    # Damaged or missing: listed all the same, with a size that is not 0 so
                    # that a read reaches the mount (which answers EIO) instead of an empty
                    # file being read from the kernel's cache.
                    size = 1
            out.append(TreeEntry(entry.raw_name, kind, bool(mode & 0o111), str(entry.id), size))
    return out
