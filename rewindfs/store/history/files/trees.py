"""Reading a checkpoint's files: tree entries, blob bytes, the changes between two trees,
and whether a stored tree is safe to write out.

Paths are bytes relative to the project root (file names need not be UTF-8).

A stored tree is data, not trust: any tool that writes the store (Hermes, git, a
hostile process) can store an entry named `..`, one holding a `/`, or `.git`.
`unsafe_entry` finds such names, with git fsck's rules (`.git` also in the forms
HFS+ and NTFS treat as `.git`), before anything is written from a tree.
"""

from __future__ import annotations

import os
import queue
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from rewindfs.errors import StoreError
from rewindfs.store.objects import damage
from rewindfs.store.objects.layout import layout_of, objects_dir

LINK = int(FileMode.LINK)
TREE = int(FileMode.TREE)
COMMIT = int(FileMode.COMMIT)   # a gitlink: a nested repository's commit


def kind(mode: int) -> int:
    """A file's type in its mode, as git tells a type change (not the x bit)."""
    return mode & 0o170000
EXECUTABLE = int(FileMode.BLOB_EXECUTABLE)
STREAM_AT = 8 * 1024 * 1024  # blobs this big are read in pieces, never whole (Streamed)
MAX_DEPTH = 100  # path components a restore writes at most: capture.deepdirs.MAX_DEPTH


@dataclass(frozen=True)
class Entry:
    path: bytes
    oid: str
    mode: int

    @property
    def is_link(self) -> bool:
        return self.mode == LINK


@dataclass(frozen=True)
class Change:
    """`path` goes from `old` (None: absent) to `new` (None: absent)."""

    path: bytes
    old: Entry | None
    new: Entry | None


def changes(repo: pygit2.Repository, old_tree: str, new_tree: str) -> list[Change]:
    """Every file that differs between two trees (content, mode or type; a gitlink's
    commit too), by path; no rename pairing: what libgit2's tree diff lists with
    INCLUDE_TYPECHANGE (tests/store/test_tree_changes.py holds them equal), read here
    because libgit2 (1.9) walks both trees whole, where only the subtrees whose ids differ
    need reading: a one-file change of a 78,000-file tree cost it 50-100 ms, 0.3 ms here."""
    out: list[Change] = []
    # (a stack, not recursion: a tree can be 20,000 levels deep)
    stack: list[tuple[pygit2.Tree | None, pygit2.Tree | None, bytes]] = [
        (_tree(repo, old_tree), _tree(repo, new_tree), b"")]
    while stack:
        old, new, base = stack.pop()
        olds = {e.raw_name: e for e in old} if old is not None else {}
        news = {e.raw_name: e for e in new} if new is not None else {}
        for name in olds.keys() | news.keys():
            a, b = olds.get(name), news.get(name)
            if a is not None and b is not None and a.id == b.id and a.filemode == b.filemode:
                continue
            path = base + b"/" + name if base else name
            a_tree = a is not None and a.filemode == TREE
            b_tree = b is not None and b.filemode == TREE
            if a_tree or b_tree:   # a folder on either side: its files, one by one
                stack.append((_tree(repo, str(a.id)) if a_tree else None,
                              _tree(repo, str(b.id)) if b_tree else None, path))
                a, b = (None if a_tree else a), (None if b_tree else b)
                if a is None and b is None:
                    continue
            out.append(Change(path,
                              Entry(path, str(a.id), a.filemode) if a is not None else None,
                              Entry(path, str(b.id), b.filemode) if b is not None else None))
    out.sort(key=lambda c: c.path)   # (full paths bytewise: git's tree order)
    return out


def walk_entries(repo: pygit2.Repository, tree_id: str, prefix: bytes = b"") -> Iterator[Entry]:
    """Every file and symlink under `prefix` (b"" = the whole tree), depth first."""
    node = lookup_tree(repo, tree_id, prefix) if prefix else repo[tree_id]
    if node is None:
        return
    if not isinstance(node, pygit2.Tree):
        entry = lookup(repo, tree_id, prefix)
        if entry is not None:
            yield entry
        return
    stack = [(prefix, node)]
    while stack:
        base, tree = stack.pop()
        for item in tree:
            path = base + b"/" + item.raw_name if base else item.raw_name
            if item.filemode == int(FileMode.TREE):
                stack.append((path, repo[item.id]))
            elif item.filemode != int(FileMode.COMMIT):
                yield Entry(path, str(item.id), item.filemode)


def entry_at(repo: pygit2.Repository, tree_id: str, path: bytes) -> pygit2.Object | None:
    """The entry at `path` in the tree (None: no such path). A tree on the way that is
    missing or unreadable is damage (StoreDamaged naming it), never "not there": pygit2
    says KeyError for both, so a miss is walked again one directory at a time."""
    try:
        return repo[tree_id][os.fsdecode(path)]
    except (KeyError, pygit2.GitError):
        pass
    tree = _tree(repo, tree_id)
    parts = os.fsdecode(path).split("/")
    for at, name in enumerate(parts):
        try:
            item = tree[name]
        except KeyError:
            return None
        if at == len(parts) - 1:
            return item
        if item.filemode != int(FileMode.TREE):
            return None
        tree = _tree(repo, str(item.id))
    return None


def _tree(repo: pygit2.Repository, oid: str) -> pygit2.Tree:
    """Tree `oid`, which a checkpoint names: missing or unreadable is damage."""
    try:
        found = repo[oid]
        if isinstance(found, pygit2.Tree):
            return found
    except (KeyError, ValueError, pygit2.GitError) as exc:
        problem = damage.object_problem(objects_dir(Path(repo.path)), oid)
        raise (problem or StoreError(f"checkpoint tree {oid[:12]} is unreadable: {exc}")) \
            from exc
    raise StoreError(f"object {oid[:12]} named as a tree is a {found.type_str}")


def lookup_tree(repo: pygit2.Repository, tree_id: str, path: bytes):
    """The object at `path` in the tree (a Tree or Blob), or None."""
    item = entry_at(repo, tree_id, path)
    return None if item is None else repo[item.id]


def lookup(repo: pygit2.Repository, tree_id: str, path: bytes) -> Entry | None:
    """The file or symlink entry at `path`, or None (missing, or a directory)."""
    item = entry_at(repo, tree_id, path)
    if item is None or item.filemode in (int(FileMode.TREE), int(FileMode.COMMIT)):
        return None
    return Entry(path, str(item.id), item.filemode)


def is_dir(repo: pygit2.Repository, tree_id: str, path: bytes) -> bool:
    item = entry_at(repo, tree_id, path)
    return item is not None and item.filemode == int(FileMode.TREE)


def blob_bytes(repo: pygit2.Repository, oid: str) -> bytes:
    try:
        return repo[oid].data
    except (KeyError, pygit2.GitError) as exc:
        found = damage.object_problem(objects_dir(Path(repo.path)), oid)
        if found is not None:
            raise found from exc
        raise StoreError(f"checkpoint store is missing object {oid[:12]}: {exc}") from exc


class Streamed:
    """A blob too big to hold whole (STREAM_AT or more): its size, and its bytes handed
    out in pieces. libgit2 reads an object whole (a 2 GiB blob would be 2 GiB in this
    process, and more while it is inflated), so git reads it in its own process
    (store.objects.catfile), as the mount does."""

    def __init__(self, repo: pygit2.Repository, oid: str, size: int):
        self.repo, self.oid, self.size = repo, oid, size

    def copy(self, sink: Callable[[bytes], object]) -> int:
        """Hand the bytes to `sink` in pieces of at most 1 MiB; returns how many."""
        from rewindfs.store.objects.catfile import BlobPipe  # (git: only for a big blob)

        pipe = BlobPipe(layout_of(self.repo.path))
        try:
            return pipe.copy(self.oid, sink)
        except KeyError as exc:
            found = damage.object_problem(objects_dir(Path(self.repo.path)), self.oid)
            raise (found or StoreError(f"checkpoint store is missing object "
                                       f"{self.oid[:12]}")) from exc
        finally:
            pipe.close()

    def chunks(self) -> Iterator[bytes]:
        """The bytes in pieces, pulled: read ahead a few pieces at most (a thread copies
        into a bounded queue), and stopped when the caller stops early."""
        pieces: queue.Queue = queue.Queue(maxsize=4)
        stop = threading.Event()

        def sink(piece: bytes) -> None:
            while True:
                if stop.is_set():
                    raise _Stopped
                try:
                    pieces.put(piece, timeout=0.1)
                    return
                except queue.Full:
                    continue

        def run() -> None:
            try:
                self.copy(sink)
                pieces.put(_END)
            except BaseException as exc:  # noqa: BLE001 - handed to the reader
                if not isinstance(exc, _Stopped):
                    pieces.put(exc)

        reader = threading.Thread(target=run, name="rewindfs-blob", daemon=True)
        reader.start()
        try:
            while (piece := pieces.get()) is not _END:
                if isinstance(piece, BaseException):
                    raise piece
                yield piece
        finally:
            stop.set()
            while reader.is_alive():
                try:
                    pieces.get(timeout=0.1)
                except queue.Empty:
                    pass
            reader.join()


class _Stopped(Exception):
    pass


_END = object()


def blob_source(repo: pygit2.Repository, oid: str) -> bytes | Streamed:
    """A blob's bytes, or a Streamed for one too big to hold whole."""
    try:
        size = repo.odb.read_header(oid)[1]
    except (KeyError, ValueError, pygit2.GitError):
        return blob_bytes(repo, oid)  # names what is wrong with it
    return Streamed(repo, oid, size) if size >= STREAM_AT else blob_bytes(repo, oid)


def copy_blob(repo: pygit2.Repository, oid: str, sink: Callable[[bytes], object]) -> int:
    """Hand blob `oid` to `sink` (in pieces when it is big); returns its size."""
    found = blob_source(repo, oid)
    if isinstance(found, Streamed):
        return found.copy(sink)
    sink(found)
    return len(found)


def file_oid(path: bytes) -> str | None:
    """The blob id the file (or symlink) at `path` would have, or None if it is gone."""
    try:
        if os.path.islink(path):
            return str(pygit2.hash(os.readlink(path)))
        return str(pygit2.hashfile(path))
    except (OSError, pygit2.GitError):
        return None


# -- validating stored names ----------------------------------------------------------

# Code points HFS+ ignores when comparing names (git's next_hfs_char): ".g\u200cit" is .git there.
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
# What NTFS treats as .git: trailing dots and spaces dropped, the 8.3 name, a stream suffix.
_NTFS_DOTGIT = re.compile(rb"(?i)(\.git|git~1)[. ]*($|[\\/:])")
_SAFE_TREES: set[str] = set()  # tree ids already checked (ids name content, so forever)
_SAFE_TREES_MAX = 200_000


def unsafe_name(name: bytes) -> str | None:
    """Why `name` must never be written as a path component, or None if it may."""
    if not name:
        return "an empty name"
    if name in (b".", b".."):
        return f"the name {name.decode()!r}"
    if b"/" in name:
        return "a name containing '/'"
    if b"\0" in name:
        return "a name containing a NUL byte"
    if name.lower() == b".git" or _NTFS_DOTGIT.match(name):
        return "a .git entry"
    try:
        folded = _HFS_IGNORED.sub("", name.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    if folded.lower() == ".git":
        return "a .git entry (as HFS+ reads it)"
    return None


def unsafe_entry(repo: pygit2.Repository, tree_id: str) -> tuple[bytes, str] | None:
    """The first entry anywhere below `tree_id` that must not be written, as (path, why):
    an unsafe name, or a path deeper than MAX_DEPTH levels (as first met: each distinct
    subtree is looked at once); None when every name in it is safe. Raises StoreError
    for a missing object."""
    if tree_id in _SAFE_TREES:
        return None
    checked: list[str] = []
    seen: set[str] = set()  # each distinct subtree once: its names are the same wherever
    stack: list[tuple[bytes, str]] = [(b"", tree_id)]
    while stack:
        base, oid = stack.pop()
        if oid in _SAFE_TREES or oid in seen:
            continue
        seen.add(oid)
        try:
            tree = repo[oid]
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise StoreError(f"checkpoint store cannot read tree {oid[:12]}: {exc}") from exc
        if not isinstance(tree, pygit2.Tree):
            return base, "an entry claiming to be a directory that is not one"
        deep = base.count(b"/") + 2 > MAX_DEPTH if base else MAX_DEPTH < 1
        for item in tree:
            name = item.raw_name
            path = base + b"/" + name if base else name
            why = unsafe_name(name)
            if why is not None:
                return path, why
            if deep:  # no capture here stores deeper: its files could never be captured back
                return path, f"more than {MAX_DEPTH} levels deep (capture stops there)"
            if item.filemode == int(FileMode.TREE):
                stack.append((path, str(item.id)))
        checked.append(oid)
    if len(_SAFE_TREES) + len(checked) > _SAFE_TREES_MAX:
        _SAFE_TREES.clear()
    _SAFE_TREES.update(checked)
    return None
