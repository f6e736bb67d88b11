"""Files git tracks are captured whatever the excludes say: excludes are for what git does
not track.

The project's own git index (its repository found as git finds it, from the project
upward) says what git tracks. A tracked file that rewindfs's default excludes, the
project's `.gitignore` files or its `.git/info/exclude` match is invisible to the walk
while the capture does not hold it: this hands such files to the walk. Only what the person
told rewindfs to leave out (`.rewindignore`, extra excludes), the secret defaults and what
is always left out still leave a tracked file out, and each one is named (`excluded`).

Cost. The tracked files the excludes match are remembered between captures (`tracked.json`
in the project's admin dir) with the identity of git's index (size, times, inode); each
capture looks at those (an lstat each). Git's index is read again only when it changed:
libgit2 reads a 100,000-file index in about 75 ms and compares it with the capture's own
in about 10 ms (docs/performance.md). A file git tracks that vanished and came back while
git's index did not change is found the same way.

Git's index is untrusted input: read only when its size is under MAX_INDEX_BYTES and can
hold the entries its header counts (objects.indexfile), and each path it names is taken
only when it is relative, has no empty, `.` or `..` part and no parent that is not a real
directory (nothing behind a symlink). When it cannot be read, the capture says so
(`unread`) and goes on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

from rewindfs.lazylog import logger
from rewindfs.store.capture.walk import Walk, blocking_parent
from rewindfs.store.objects import gitextra, ignore, indexfile
from rewindfs.store.objects.private import write_atomic
from rewindfs.store.objects.repo import TRACKED_EXCLUDE_FILE, Project

MAX_INDEX_BYTES = 256 << 20   # a git index larger than this is not read (about 2.5M files)
CACHE_FILE = "tracked.json"
SKIP_WORKTREE = 1 << 14       # an entry a sparse checkout keeps out of the working tree
GITLINK = 0o160000            # a submodule: its own repository says what it tracks
log = logger(__name__)


class Tracked:
    """The tracked files of one capture's project that the excludes match."""

    def __init__(self, project: Project, walk: Walk, rules: list[bytes]):
        self.project, self.walk, self.rules = project, walk, rules
        self.admin = project.store.layout.worktree_admin(project.h16)
        self.excluded: list[bytes] = []   # tracked files the person's rules leave out
        self.unread: str | None = None    # why git's index could not be read
        self.index: pygit2.Index | None = None
        self.index_path = Path()
        self.prefix = b""
        self.key: list | None = None
        self.paths: set[bytes] = set()    # tracked paths the excludes match
        self.changed = False
        self.complete = False   # `paths` known (remembered for this index, or read)
        self.found: set[bytes] | None = None

    # -- finding them ----------------------------------------------------------------

    def add_to_walk(self, paths: list[bytes] | None) -> None:
        """Hand the walk the tracked files it could not see, under `paths` (None: all)."""
        if paths == [] or not self._locate():
            return
        index_path = self.index_path
        key, cached = self._cache()
        if key == self.key:
            self.paths, self.complete = cached, True
        else:
            try:
                if not self._read(cached):
                    return
            except (pygit2.GitError, OSError, ValueError) as exc:
                self.unread = f"{index_path} could not be compared: {exc}"
                self.key = None
                return
        walk = self.walk
        # A captured file changed is the walk's to find; but one named alone (a capture
        # of a few paths) is staged by name, where the excludes still hide it.
        named = set(paths or ())
        candidates = [p for p in self.paths if _within(p, paths) and p not in self._found()
                      and (p in named or not walk.tracked(p))]
        keep = []
        for rel in sorted(candidates):
            if blocking_parent(walk.root, rel) is not None:
                continue   # behind a link or a file now: not project content
            try:
                os.lstat(walk.root + b"/" + rel)
            except OSError:
                continue
            keep.append(rel)
        if not keep:
            return
        with self.only_the_persons_rules():
            left_out = {rel for rel in keep if self._excluded_now(rel)}
        for rel in keep:
            if rel in left_out:
                self.excluded.append(rel)
            else:
                walk.admit(rel)

    def keeping(self, rels: list[bytes]) -> set[bytes]:
        """Those of `rels` (captured files the excludes now match: the exclude files
        changed) that stay: git tracks them and the person's rules do not leave them out."""
        if not rels or (self.key is None and not self._locate()):
            return set()
        if not self.complete:   # a capture of nothing afresh: what is tracked, found now
            try:
                self._read(self._cache()[1])
            except (pygit2.GitError, OSError, ValueError) as exc:
                self.unread = f"{self.index_path} could not be compared: {exc}"
        if self.index is None and self.unread is None:
            self._load_index()
        if self.index is None:
            return set()
        tracked = [rel for rel in rels if self._in_git(rel)]
        if not tracked:
            return set()
        with self.only_the_persons_rules():
            kept = {rel for rel in tracked if not self._excluded_now(rel)}
        self.paths |= kept
        self.changed = True
        return kept

    def unchanged(self) -> bool:
        """git's index is as the last capture found it (or there is none, as then): the
        tracked files the excludes match are the ones remembered."""
        now = self.key if self._locate() else None
        return now == self._cache()[0]

    def _locate(self) -> bool:
        """Find git's index (`index_path`, `prefix`, `key`); False when there is none."""
        where = _git_index_of(self.project.workdir)
        if where is None or not where[0].exists():
            return False   # no repository, or one where nothing was ever added
        self.index_path, self.prefix = where
        self.key = _identity(self.index_path, self.prefix)
        return True

    def save(self) -> None:
        """Remember the tracked files the excludes match, for the next capture."""
        if self.key is None or not self.changed:
            return
        data = {"key": self.key, "paths": sorted(os.fsdecode(p) for p in self.paths)}
        try:
            write_atomic(self.admin / CACHE_FILE, json.dumps(data), durable=False)
        except OSError:
            log.debug("could not save %s", self.admin / CACHE_FILE, exc_info=True)

    # -- git's index -------------------------------------------------------------------

    def _cache(self) -> tuple[list | None, set[bytes]]:
        """(the identity of git's index, the tracked paths the excludes matched) as the
        last capture left them."""
        try:
            data = json.loads((self.admin / CACHE_FILE).read_text(encoding="utf-8"))
            return data["key"], {os.fsencode(p) for p in data["paths"] if isinstance(p, str)}
        except (OSError, ValueError, KeyError, TypeError):
            return None, set()

    def _load_index(self) -> None:
        path = self.index_path
        try:
            size = os.stat(path).st_size
        except OSError as exc:
            self.unread = f"{path}: {exc.strerror}"
            return
        if size > MAX_INDEX_BYTES:
            self.unread = f"{path} is over {MAX_INDEX_BYTES >> 20} MiB: not read"
        elif not indexfile.could_hold_its_entries(path):
            self.unread = f"{path} is damaged (it counts more entries than it holds)"
        else:
            try:
                self.index = _open_index(path)
            except (pygit2.GitError, OSError, ValueError) as exc:
                self.unread = f"{path} could not be read: {exc}"

    def _read(self, old: set[bytes]) -> bool:
        """Find the tracked files the excludes match, from git's index (changed since the
        last capture, which found `old`). False when it could not be read (`unread`)."""
        self._load_index()
        if self.index is None:
            return False
        self.paths = {p for p in old if self._in_git(p)}
        dropped = [p for p in old - self.paths if self.walk.tracked(p) and self.walk.ignored(p)]
        for rel in dropped:   # git no longer tracks it: the excludes apply again
            C.git_index_remove(self.walk.index._index, rel, 0)
            self.walk.dirty = True
        for rel in self._not_captured():
            if rel not in self.paths and _safe(rel) and self.walk.ignored(rel):
                self.paths.add(rel)
        self.changed = self.complete = True
        return True

    def _in_git(self, rel: bytes) -> bool:
        assert self.index is not None
        entry = C.git_index_get_bypath(self.index._index, self.prefix + rel, 0)
        return entry != ffi.NULL and not entry.flags_extended & SKIP_WORKTREE

    def _not_captured(self) -> Iterator[bytes]:
        """Paths (project-relative) git tracks that the capture neither holds nor found."""
        assert self.index is not None
        walk, found = self.walk, self._found()
        if not self.prefix and gitextra.AVAILABLE:
            with gitextra.index_to_index(walk.repo, self.index, walk.index) as deltas:
                for delta in deltas:
                    if delta.status == gitextra.DELETED and delta.old_file.mode != GITLINK:
                        rel = ffi.string(delta.old_file.path)
                        if rel not in found and self._in_git(rel):
                            yield rel
            return
        raw, prefix = self.index._index, self.prefix
        count = C.git_index_entrycount(raw)
        low, high = 0, count   # entries are sorted by path: the first one under the prefix
        while low < high:
            mid = (low + high) // 2
            if ffi.string(C.git_index_get_byindex(raw, mid).path) < prefix:
                low = mid + 1
            else:
                high = mid
        for i in range(low, count):
            entry = C.git_index_get_byindex(raw, i)
            path = ffi.string(entry.path)
            if not path.startswith(prefix):
                break
            rel = path[len(prefix):]
            if (entry.flags_extended & SKIP_WORKTREE or entry.mode == GITLINK or rel in found
                    or walk.tracked(rel)):
                continue
            yield rel

    def _found(self) -> set[bytes]:
        if self.found is None:
            self.found = {rel for rel, _st in self.walk.found} | set(self.walk.oversize)
        return self.found

    # -- the person's rules --------------------------------------------------------------

    @contextmanager
    def only_the_persons_rules(self) -> Iterator[None]:
        """For the block, the project's handle knows only the rules that leave out a
        tracked file (its internal rules, which libgit2 asks first: a catch-all `!*`
        makes every other rule source unheard), then the capture's again."""
        repo = self.project.repo
        try:
            text = (self.admin / TRACKED_EXCLUDE_FILE).read_bytes()
        except OSError:
            text = ignore.tracked_exclude_text(self.project.workdir).encode(
                "utf-8", "surrogateescape")
        gitextra.clear_ignore_rules(repo)
        try:
            gitextra.add_ignore_rules(repo, [b"!*", text, *self.rules])
            yield
        finally:
            gitextra.clear_ignore_rules(repo)
            gitextra.add_ignore_rules(repo, self.rules)

    def _excluded_now(self, rel: bytes) -> bool:
        """Under `only_the_persons_rules`: whether they leave `rel` out. The catch-all
        decides a path no rule names, so each parent directory is asked on its own."""
        parts = rel.split(b"/")
        return any(self.walk.ignored(b"/".join(parts[:i]) + b"/")
                   for i in range(1, len(parts))) or self.walk.ignored(rel)


def _git_index_of(workdir: Path) -> tuple[Path, bytes] | None:
    """(git's index, the project's path in its repository with a trailing "/", or b"")
    of the repository holding `workdir`, if any (bare ones have no files to track)."""
    try:
        gitdir = pygit2.discover_repository(str(workdir))
        if gitdir is None:
            return None
        repo = pygit2.Repository(gitdir)
        top = repo.workdir
    except (pygit2.GitError, OSError, ValueError):
        return None
    if top is None:
        return None
    rel = os.path.relpath(workdir, os.path.realpath(top))
    if rel == ".":
        return Path(repo.path) / "index", b""
    if rel.startswith(".."):
        return None
    return Path(repo.path) / "index", os.fsencode(rel) + b"/"


def _open_index(path: Path) -> pygit2.Index:
    """pygit2.Index(path), without the half-made object whose __del__ complains on
    stderr when the file cannot be read."""
    cindex = ffi.new("git_index **")
    check_error(C.git_index_open(cindex, os.fsencode(path)))
    return pygit2.Index.from_c(None, cindex)


def _identity(path: Path, prefix: bytes) -> list:
    """What changes when git writes its index (it writes a new file and renames it)."""
    try:
        st = os.stat(path)
    except OSError:
        return [str(path), os.fsdecode(prefix)]
    return [str(path), os.fsdecode(prefix), st.st_size, st.st_mtime_ns, st.st_ctime_ns,
            st.st_ino, st.st_dev]


def _safe(rel: bytes) -> bool:
    """A path inside the project: relative, no empty, `.` or `..` part."""
    return not rel.startswith(b"/") and all(
        part not in (b"", b".", b"..") for part in rel.split(b"/"))


def _within(rel: bytes, paths: list[bytes] | None) -> bool:
    if paths is None:
        return True
    return any(not p or rel == p or rel.startswith(p + b"/") for p in paths)


def git_ignores(workdir: Path, paths: list[str]) -> set[str]:
    """Those of `paths` (project-relative; a directory ends with "/") that git's own
    ignore rules ignore in the repository holding `workdir` (none without one)."""
    try:
        gitdir = pygit2.discover_repository(str(workdir))
        repo = pygit2.Repository(gitdir) if gitdir else None
        top = repo.workdir if repo is not None else None
    except (pygit2.GitError, OSError, ValueError):
        return set()
    if repo is None or top is None:
        return set()
    rel = os.path.relpath(workdir, os.path.realpath(top))
    prefix = "" if rel == "." else rel + "/"
    out = set()
    for path in paths:
        try:
            if repo.path_is_ignored(prefix + path):
                out.add(path)
        except (pygit2.GitError, ValueError):
            continue
    return out
