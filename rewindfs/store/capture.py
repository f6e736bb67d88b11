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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import pygit2
from pygit2.errors import check_error
from pygit2.ffi import C, ffi
from pygit2.utils import StrArray

from rewindfs.errors import Refused, StoreError
from rewindfs.store.locks import remove_stale_lock
from rewindfs.store.store import Project

# Long captures (a first checkpoint of a big tree) report progress here; the CLI sets it
# on a terminal. A context variable, so concurrent captures in other threads stay quiet.
_progress: ContextVar[Callable[[int], None] | None] = ContextVar("capture_progress",
                                                                 default=None)
PROGRESS_EVERY = 500  # files staged between two reports


@contextmanager
def reporting_progress(report: Callable[[int], None]) -> Iterator[None]:
    """Within the block, captures call `report(files_staged_so_far)` now and then."""
    token = _progress.set(report)
    try:
        yield
    finally:
        _progress.reset(token)


ATTEMPTS = 5  # a file vanishing or changing mid-walk makes add_all fail; retry without it
# libgit2's GIT_INDEX_ADD_DISABLE_PATHSPEC_MATCH: paths are literal (no globbing), and
# a directory still matches everything below it.
LITERAL_PATHS = 1 << 1


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

    def __init__(self, project: Project, index: pygit2.Index, limits: Limits,
                 unstable: set[bytes]):
        self.root = os.fsencode(str(project.workdir))
        self.unstable = unstable  # paths that kept changing while being read: skipped
        self.last: bytes | None = None  # the path libgit2 is about to read
        self.saw_gitignore = False
        self.repo = project.repo
        self.index = index
        self.limits = limits
        self.count = len(index)
        self.oversize: list[bytes] = []
        self.unreadable: list[bytes] = []
        self.nested: list[bytes] = []
        self.replaced_by_dir: list[bytes] = []  # tracked files that are directories now
        self.dirty = False  # whether the index changed (else it is not rewritten)
        self.staged = 0
        self.report = _progress.get()
        self.error: BaseException | None = None

    def tracked(self, rel: bytes) -> bool:
        return C.git_index_get_bypath(self.index._index, rel, 0) != ffi.NULL

    def admit(self, rel: bytes) -> int:
        """0 = stage this path (or drop it, if it is gone), 1 = leave it alone."""
        if rel in self.unstable:
            self.unreadable.append(rel)
            return 1
        if rel == b".gitignore" or rel.endswith(b"/.gitignore"):
            self.saw_gitignore = True
        self.last = rel
        try:
            st = os.lstat(self.root + b"/" + rel)
        except (FileNotFoundError, NotADirectoryError):
            self.dirty = True
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
        elif stat.S_ISDIR(st.st_mode):
            if self.tracked(rel):
                self.replaced_by_dir.append(rel)  # dropped after the walk
            return 1
        elif not stat.S_ISLNK(st.st_mode):
            return 1  # sockets, fifos, devices: not content
        self.dirty = True
        self.staged += 1
        if self.report is not None and self.staged % PROGRESS_EVERY == 0:
            self.report(self.staged)
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

    def stage_one(self, rel: bytes) -> None:
        """Stage a single named path: add it, or drop it (and anything below it) if gone.

        A parent that is no longer a real directory (a symlink, a file) is staged
        instead: what lies behind a link is not project content.
        """
        blocking = _blocking_parent(self.root, rel)
        if blocking is not None:
            C.git_index_remove_directory(self.index._index, blocking, 0)
            rel = blocking
        self.dirty = True
        full = self.root + b"/" + rel
        if _is_real_dir(full):
            # A directory where a file was tracked (directories with content go to add_all).
            if self.tracked(rel):
                check_error(C.git_index_remove(self.index._index, rel, 0))
            return
        if not os.path.lexists(full):
            if self.tracked(rel):
                check_error(C.git_index_remove(self.index._index, rel, 0))
            else:
                check_error(C.git_index_remove_directory(self.index._index, rel, 0))
            return
        # A file or link where a directory was tracked: what was below it is gone.
        check_error(C.git_index_remove_directory(self.index._index, rel, 0))
        if self.ignored(rel) or self.admit(rel) != 0:
            return
        err = C.git_index_add_bypath(self.index._index, rel)
        if err != C.GIT_ENOTFOUND:
            check_error(err, io=True)

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


def capture(project: Project, limits: Limits, paths: list[bytes] | None = None) -> Capture:
    """Stage the working tree into the project's index and write its tree object.

    With `paths`, only those files and directories are looked at; every other
    entry stays as the last capture saw it. The caller holds the project lock.
    Raises Refused when the project has more than `limits.max_files` files
    (nothing is written then).
    """
    index = project.repo.index
    # We hold the project lock, so an index.lock now is a killed process's.
    remove_stale_lock(project.store.layout.worktree_admin(project.h16) / "index.lock", 0.0)
    index.read(False)
    files, dirs = _split_paths(project, paths)
    unstable: set[bytes] = set()
    for attempt in range(ATTEMPTS):
        walk = _Walk(project, index, limits, unstable)
        try:
            # libgit2 hashes a tracked file whose stat changed before any callback runs,
            # so a file that keeps changing is taken out of the index for the walk
            # (untracked files are not read) and its previous version put back after.
            held = [index[os.fsdecode(rel)] for rel in unstable if walk.tracked(rel)]
            for entry in held:
                index.remove(entry.path)
            for rel in files:
                walk.stage_one(rel)
            if paths is None or dirs:
                _add_all(walk, [os.fsdecode(d) for d in dirs])
            for rel in walk.nested:
                walk.add_nested(rel)
            for entry in held:
                index.add(pygit2.IndexEntry(entry.path, entry.id, entry.mode))
        except _TooManyFiles:
            index.read(True)  # drop the partial staging
            raise Refused(
                f"{project.workdir} has more than {limits.max_files} files "
                "(raise max_files or add ignore rules)"
            ) from None
        except (OSError, pygit2.GitError) as exc:
            if attempt + 1 < ATTEMPTS and _looks_transient(exc):
                # libgit2 does not say which file changed under it. The last path it
                # asked about is the usual culprit; from the second failure on, skip
                # every tracked file written in the last moments too.
                if walk.last is not None:
                    unstable.add(walk.last)
                if attempt >= 1:
                    unstable.update(_recently_written(walk))
                continue
            index.read(True)
            raise StoreError(f"could not capture {project.workdir}: {exc}") from exc
        break
    for rel in (*walk.oversize, *walk.replaced_by_dir):
        if walk.tracked(rel):
            C.git_index_remove(index._index, rel, 0)
            walk.dirty = True
    stamp = _IgnoreStamp(project)
    if walk.saw_gitignore or stamp.changed:
        _drop_now_ignored(walk)
        walk.dirty = True
    try:
        tree_id = index.write_tree()
        if walk.dirty or held:
            index.write()  # the stat cache; skipped when nothing changed (it is large)
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
        nested_repos=[decode(p) for p in walk.nested],
    )


def _add_all(walk: _Walk, pathspecs: list[str]) -> None:
    callback = ffi.callback("git_index_matched_path_cb", walk.on_path)
    with StrArray(pathspecs) as spec:
        flags = LITERAL_PATHS if pathspecs else 0
        err = C.git_index_add_all(walk.index._index, spec.ptr, flags, callback, ffi.NULL)
    if walk.error is not None:
        raise walk.error
    check_error(err, io=True)


def _blocking_parent(root: bytes, rel: bytes) -> bytes | None:
    """The first ancestor of `rel` that exists but is not a real directory, if any."""
    parts = rel.split(b"/")[:-1]
    for i in range(1, len(parts) + 1):
        ancestor = b"/".join(parts[:i])
        try:
            if not stat.S_ISDIR(os.lstat(root + b"/" + ancestor).st_mode):
                return ancestor
        except OSError:
            return None  # missing: nothing below it exists either
    return None


def _is_real_dir(path: bytes) -> bool:
    """A directory itself, not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _split_paths(project: Project, paths: list[bytes] | None) -> tuple[list[bytes], list[bytes]]:
    """(files, directories) among `paths`; add_all walks the whole tree even for one
    file, so single files are staged directly."""
    files, dirs = [], []
    root = os.fsencode(str(project.workdir))
    for rel in paths or []:
        real_dir = _is_real_dir(root + b"/" + rel) and _blocking_parent(root, rel) is None
        (dirs if real_dir else files).append(rel)
    return files, dirs


_TRANSIENT = ("not found", "no such file", "changed before", "failed to read", "error reading",
              "could not read", "read error", "short read")


def _looks_transient(exc: BaseException) -> bool:
    """A file deleted, replaced or rewritten between the walk and its hashing."""
    text = str(exc).lower()
    return isinstance(exc, FileNotFoundError) or any(t in text for t in _TRANSIENT)


def _recently_written(walk: _Walk, window: float = 2.0) -> set[bytes]:
    """Tracked files modified within `window` seconds: candidates for "still being written"."""
    recent = set()
    cutoff = time.time() - window
    for entry in walk.index:
        rel = os.fsencode(entry.path)
        try:
            if os.lstat(walk.root + b"/" + rel).st_mtime >= cutoff:
                recent.add(rel)
        except OSError:
            continue
    return recent


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
            self.file.write_text(self.current)


def _drop_now_ignored(walk: _Walk) -> None:
    gone = [entry.path for entry in walk.index if walk.ignored(os.fsencode(entry.path))]
    for path in gone:
        C.git_index_remove(walk.index._index, os.fsencode(path), 0)
