"""Capturing a working directory into its project's index and writing the tree.

libgit2's `git_index_add_all` walks the tree honouring every ignore source,
re-hashes only files whose stat data changed (the index persists between
checkpoints, so it is a stat cache), and calls back once per candidate path
before touching it. The callback is where rewindfs applies what git itself has
no notion of: the per-file size cap, the max_files guard (aborting the walk as
soon as the count is exceeded), unreadable files, and nested repositories, which
add_all would otherwise store as gitlinks (contents lost) or fail on (an empty
nested repo). Nested repositories are captured file by file instead; once their
files are in the index, later walks descend into them normally.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

import pygit2
from pygit2.errors import check_error
from pygit2.ffi import C, ffi
from pygit2.utils import StrArray

from rewindfs.errors import Refused, StoreError
from rewindfs.store.store import Project

ATTEMPTS = 3  # a file vanishing mid-walk makes add_all fail; the next walk no longer sees it


@dataclass(frozen=True)
class Limits:
    max_file_size: int = 10 * 1024 * 1024  # bytes; a file exactly this big is kept; 0 = no cap
    max_files: int = 50_000


DEFAULT_LIMITS = Limits()


@dataclass
class Capture:
    tree_id: pygit2.Oid
    file_count: int
    oversize: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    nested_repos: list[str] = field(default_factory=list)


class _TooManyFiles(Exception):
    pass


class _Walk:
    """State shared by the add_all callback and the nested-repository walk."""

    def __init__(self, project: Project, index: pygit2.Index, limits: Limits):
        self.root = os.fsencode(str(project.workdir))
        self.repo = project.repo
        self.index = index
        self.limits = limits
        self.count = len(index)
        self.oversize: list[bytes] = []
        self.unreadable: list[bytes] = []
        self.nested: list[bytes] = []
        self.error: BaseException | None = None

    def tracked(self, rel: bytes) -> bool:
        return C.git_index_get_bypath(self.index._index, rel, 0) != ffi.NULL

    def admit(self, rel: bytes) -> int:
        """0 = stage this path (or drop it, if it is gone), 1 = leave it alone."""
        try:
            st = os.lstat(self.root + b"/" + rel)
        except (FileNotFoundError, NotADirectoryError):
            return 0  # deleted (or a parent dir became a file): add_all removes it
        except OSError:
            self.unreadable.append(rel)
            return 1
        if stat.S_ISREG(st.st_mode):
            if self.limits.max_file_size and st.st_size > self.limits.max_file_size:
                self.oversize.append(rel)
                return 1
            try:
                os.close(os.open(self.root + b"/" + rel, os.O_RDONLY | os.O_NONBLOCK))
            except (FileNotFoundError, NotADirectoryError):
                return 0
            except OSError:
                self.unreadable.append(rel)
                return 1
        elif not stat.S_ISLNK(st.st_mode):
            return 1  # sockets, fifos, devices: not content
        if not self.tracked(rel):
            self.count += 1
            if self.count > self.limits.max_files:
                raise _TooManyFiles
        return 0

    def on_path(self, path, _matched, _payload) -> int:
        try:
            rel = ffi.string(path)
            if rel.endswith(b"/"):
                self.nested.append(rel.rstrip(b"/"))
                return 1
            return self.admit(rel)
        except BaseException as exc:  # noqa: BLE001 - must not unwind through C
            self.error = exc
            return -1

    def ignored(self, rel: bytes) -> bool:
        try:
            return self.repo.path_is_ignored(os.fsdecode(rel))
        except (UnicodeError, ValueError):
            return False

    def add_nested(self, top: bytes) -> None:
        for dirpath, dirnames, filenames in os.walk(self.root + b"/" + top):
            rel_dir = dirpath[len(self.root) + 1 :]
            keep = []
            for name in dirnames:
                rel = rel_dir + b"/" + name
                if os.path.islink(dirpath + b"/" + name):
                    filenames.append(name)  # a link is content; never followed
                elif name != b".git" and not self.ignored(rel + b"/"):
                    keep.append(name)
            dirnames[:] = keep
            for name in filenames:
                rel = rel_dir + b"/" + name
                if name == b".git" or self.ignored(rel) or self.admit(rel) != 0:
                    continue
                err = C.git_index_add_bypath(self.index._index, rel)
                if err == C.GIT_ENOTFOUND:
                    continue  # vanished since admit()
                check_error(err, io=True)


def capture(project: Project, limits: Limits) -> Capture:
    """Stage the working tree into the project's index and write its tree object.

    The caller holds the project lock. Raises Refused when the project has more
    than `limits.max_files` files (nothing is written then).
    """
    index = project.repo.index
    _clear_stale_lock(project)
    index.read(False)
    for attempt in range(ATTEMPTS):
        walk = _Walk(project, index, limits)
        callback = ffi.callback("git_index_matched_path_cb", walk.on_path)
        with StrArray([]) as pathspec:
            err = C.git_index_add_all(index._index, pathspec.ptr, 0, callback, ffi.NULL)
        try:
            if walk.error is not None:
                raise walk.error
            check_error(err, io=True)
            for rel in walk.nested:
                walk.add_nested(rel)
        except _TooManyFiles:
            index.read(True)  # drop the partial staging
            raise Refused(
                f"{project.workdir} has more than {limits.max_files} files "
                "(raise max_files or add ignore rules)"
            ) from None
        except (OSError, pygit2.GitError) as exc:
            if attempt + 1 < ATTEMPTS and _looks_transient(exc):
                continue
            index.read(True)
            raise StoreError(f"could not capture {project.workdir}: {exc}") from exc
        break
    for rel in walk.oversize:
        if walk.tracked(rel):
            C.git_index_remove(index._index, rel, 0)
    try:
        tree_id = index.write_tree()
        index.write()
    except (OSError, pygit2.GitError) as exc:
        index.read(True)
        raise StoreError(f"could not write to the checkpoint store: {exc}") from exc
    decode = os.fsdecode
    return Capture(
        tree_id=tree_id,
        file_count=len(index),
        oversize=[decode(p) for p in walk.oversize],
        unreadable=[decode(p) for p in walk.unreadable],
        nested_repos=[decode(p) for p in walk.nested],
    )


def _looks_transient(exc: BaseException) -> bool:
    # A file deleted or replaced between the walk and its hashing.
    text = str(exc).lower()
    return isinstance(exc, FileNotFoundError) or "not found" in text or "no such file" in text


def _clear_stale_lock(project: Project) -> None:
    """index.lock left by a killed process: we hold the project lock, so nobody else owns it."""
    try:
        (project.store.layout.worktree_admin(project.h16) / "index.lock").unlink()
    except FileNotFoundError:
        pass
