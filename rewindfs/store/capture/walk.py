"""One pass over the working tree: what is new, changed or deleted, and what to do about each.

`Walk` collects what libgit2's index-to-workdir diff (or add_all's callback) hands it,
after the checks git has no notion of: the size cap, the max_files guard (the files the
capture would leave: the index's entries less those it drops, plus the new files; it
stops early once the new files alone are too many, and in any case before any object
is written), nested repositories (captured file by file instead of as gitlinks) and
directories nested deeper than libgit2 walks. Running the walk, and retrying it on a
changing tree: changes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import pygit2
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

from rewindfs.store.capture import deepdirs, interrupts
from rewindfs.store.capture.progress import PROGRESS_EVERY, Progress, reporter
from rewindfs.store.objects import gitextra
from rewindfs.store.objects.repo import Project


@dataclass(frozen=True)
class Limits:
    max_file_size: int = 10 * 1024 * 1024  # bytes; a file exactly this big is kept; 0 = no cap
    max_files: int = 0  # files a capture may leave in its tree (past it: refused); 0 = no cap
    # bytes: the store's whole size cap (max_total_size_mb). A checkpoint whose new objects
    # alone take more is refused before any of them is visible (storing); 0 = no cap.
    store_cap: int = 0


DEFAULT_LIMITS = Limits()


class TooManyFiles(Exception):
    pass


class Walk:
    """What one pass over the working tree found (the add_all callback, named paths,
    nested repositories)."""

    def __init__(self, project: Project, index: pygit2.Index, limits: Limits,
                 outside: int = 0):
        self.root = os.fsencode(str(project.workdir))
        self.saw_gitignore = False
        self.repo = project.repo
        self.index = index
        self.limits = limits
        self.new = 0  # files found that the index does not hold yet
        self.outside = outside  # files the tree holds beyond `index` (graft)
        self.found: list[tuple[bytes, os.stat_result]] = []  # files and links to store
        self.found_bytes = 0
        self.oversize: list[bytes] = []
        self.unreadable: list[bytes] = []
        self.nested: list[bytes] = []
        self.too_deep: list[bytes] = []
        self.replaced_by_dir: list[bytes] = []  # tracked files that are directories now
        self.dirty = False  # whether the index changed (else it is not rewritten)
        self.report = reporter()
        self.error: BaseException | None = None
        self.packed = False  # whether what was found went into a pack
        self.force_pack = False  # pack whatever is found, however little
        self.written: set[bytes] = set()  # objects written into packs
        self.damaged: set[bytes] = set()  # damaged objects the index holds
        self.first = len(index) == 0  # nothing captured before

    def tracked(self, rel: bytes) -> bool:
        return C.git_index_get_bypath(self.index._index, rel, 0) != ffi.NULL

    def files(self, dropping: list[bytes]) -> int:
        """How many files the capture leaves: the index's entries (deleted ones are out
        of it already), less those dropped after the walk (over the size cap, now
        directories, `dropping`: now ignored), plus the new files and those outside it."""
        dropped = {p for p in (*self.oversize, *self.replaced_by_dir) if self.tracked(p)}
        dropped.update(dropping)
        return (C.git_index_entrycount(self.index._index) - len(dropped) + self.new
                + self.outside)

    def admit(self, rel: bytes) -> None:
        """Note what one new, changed or deleted path is now, and what to do about it."""
        if rel == b".gitignore" or rel.endswith(b"/.gitignore"):
            self.saw_gitignore = True
        try:
            st = os.lstat(self.root + b"/" + rel)
        except (FileNotFoundError, NotADirectoryError):
            # Deleted (or a parent directory became a file).
            if self.tracked(rel):
                C.git_index_remove(self.index._index, rel, 0)
                self.dirty = True
            return
        except OSError:
            self.unreadable.append(rel)  # e.g. below a directory we may not enter
            return
        if stat.S_ISREG(st.st_mode):
            if self.limits.max_file_size and st.st_size > self.limits.max_file_size:
                self.oversize.append(rel)
                return
        elif stat.S_ISDIR(st.st_mode):
            if self.tracked(rel):
                self.replaced_by_dir.append(rel)  # dropped after the walk
            return
        elif not stat.S_ISLNK(st.st_mode):
            return  # sockets, fifos, devices: not content
        if not self.tracked(rel):
            self.new += 1
            if self.limits.max_files and self.new > self.limits.max_files:
                raise TooManyFiles  # too many whatever else goes: no need to look further
        self.found.append((rel, st))
        self.found_bytes += st.st_size
        if self.report is not None and len(self.found) % PROGRESS_EVERY == 0:
            self.report(Progress("scan", len(self.found), self.found_bytes))

    def look_at(self, rel: bytes, exists: bool = True) -> None:
        """A path the walk found new, changed or deleted (a directory holding a nested
        repository ends with "/")."""
        if rel.endswith(b"/"):
            self.nested.append(rel.rstrip(b"/"))
        elif not exists:
            self.gone(rel)
        else:
            self.admit(rel)

    def gone(self, rel: bytes) -> None:
        """A tracked path the walk did not find: deleted, below a directory now a link
        (what lies behind a link is not project content), or below a directory it may
        no longer list (kept as it was, and reported)."""
        if rel == b".gitignore" or rel.endswith(b"/.gitignore"):
            self.saw_gitignore = True
        full = self.root + b"/" + rel
        try:
            # A parent that is a link now comes first: what lies behind it (a link that
            # loops, say, which lstat would report as an error) is not project content.
            vanished = blocking_parent(self.root, rel) is not None
            if not vanished:
                os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            vanished = True
        except OSError:
            self.unreadable.append(rel)  # a parent we may not search
            return
        else:
            if not vanished:
                parent = full.rpartition(b"/")[0]
                if not os.access(parent, os.R_OK | os.X_OK):
                    self.unreadable.append(rel)  # there, in a directory we may not list
                else:
                    self.admit(rel)  # back since the walk, or a directory now
                return
        if self.tracked(rel):
            C.git_index_remove(self.index._index, rel, 0)
            self.dirty = True

    def on_path(self, path, _matched, _payload) -> int:
        """libgit2's add_all callback: 1 = leave the path to us."""
        try:
            interrupts.check()
            self.look_at(ffi.string(path))
            return 1
        except BaseException as exc:  # noqa: BLE001 - must not unwind through C
            self.error = exc
            return -1

    def stage_one(self, rel: bytes) -> None:
        """Stage a single named path: take it, or drop it (and anything below it) if gone.

        A parent that is no longer a real directory (a symlink, a file) is staged
        instead: what lies behind a link is not project content.
        """
        blocking = blocking_parent(self.root, rel)
        if blocking is not None:
            C.git_index_remove_directory(self.index._index, blocking, 0)
            rel = blocking
        self.dirty = True
        full = self.root + b"/" + rel
        if is_real_dir(full):
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
        if not self.ignored(rel):
            self.admit(rel)

    def ignored(self, rel: bytes) -> bool:
        return gitextra.path_is_ignored(self.repo, rel)

    def add_nested(self, top: bytes) -> None:
        for dirpath, dirnames, filenames in os.walk(self.root + b"/" + top):
            interrupts.check()
            rel_dir = dirpath[len(self.root) + 1 :]
            keep = []
            for name in dirnames:
                rel = rel_dir + b"/" + name
                if os.path.islink(dirpath + b"/" + name):
                    filenames.append(name)  # a link is content; never followed
                elif name == b".git" or self.ignored(rel + b"/"):
                    continue
                elif rel.count(b"/") + 1 >= deepdirs.MAX_DEPTH:
                    self.too_deep.append(rel)  # as deep as libgit2's walk goes, no deeper
                else:
                    keep.append(name)
            dirnames[:] = keep
            for name in filenames:
                rel = rel_dir + b"/" + name
                if name != b".git" and not self.ignored(rel):
                    self.admit(rel)


def blocking_parent(root: bytes, rel: bytes) -> bytes | None:
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


def is_real_dir(path: bytes) -> bool:
    """A directory itself, not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
