"""Capturing a working directory into its project's index and writing the tree.

Two stages.

Finding what changed: libgit2 diffs the project's index against the working tree
exactly as its `git_index_add_all` does, honouring every ignore source and comparing
each path's stat data with the index (which persists between checkpoints, so it is a
stat cache); rewindfs walks the resulting changes itself (gitextra) rather than
through add_all, which would also build a patch of every change. Here rewindfs applies
what git has no notion of: the size cap, the max_files guard (the walk stops as soon as
the count is exceeded, before any object is written), nested repositories (captured
file by file instead of as gitlinks), directories nested deeper than libgit2 walks,
and places never walked (rewindfs mounts, the store itself).

Storing: each file found is read once (`fileread`: what is on disk, or a truthful
"changing"/"unreadable"), hashed and deflated. Many objects go into one new pack
(`packwrite`), trees into another; a few become loose objects. A large capture is
stored on two cores: a forked child stores half of the files into a pack of its own
(`splitstore`). Index entries, with the files' full stat data so the next walk's stat
cache hits without hashing them again, are added only once their objects are on disk;
the ref moves later still (snapshot), so a crash at any point leaves no checkpoint and
no index entry referring to a missing object.
"""

from __future__ import annotations

import gc
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
from rewindfs.store import deepdirs, fileread, gitextra, heal, interrupts, mounts, splitstore
from rewindfs.store.locks import remove_stale_lock
from rewindfs.store.packwrite import BLOB, PackWriter, add_trees, deflate
from rewindfs.store.store import Project


@dataclass(frozen=True)
class Progress:
    """How far a capture is. `scan`: finding what changed (no totals yet); `store`:
    reading and writing what was found, out of known totals."""

    phase: str
    files: int
    bytes: int
    files_total: int | None = None
    bytes_total: int | None = None


# Long captures (a first checkpoint of a big tree) report progress here; the CLI sets it
# on a terminal. A context variable, so concurrent captures in other threads stay quiet.
_progress: ContextVar[Callable[[Progress], None] | None] = ContextVar("capture_progress",
                                                                      default=None)
PROGRESS_EVERY = 500  # files found between two reports while scanning
PROGRESS_SECONDS = 0.1  # at most this often while storing


@contextmanager
def reporting_progress(report: Callable, *, detailed: bool = False) -> Iterator[None]:
    """Within the block, captures report how far they are.

    By default `report(files_found_so_far)` every PROGRESS_EVERY files while scanning;
    with `detailed`, `report(Progress)` in both phases.
    """
    if not detailed:
        plain = report

        def report(p: Progress) -> None:
            if p.phase == "scan":
                plain(p.files)

    token = _progress.set(report)
    try:
        yield
    finally:
        _progress.reset(token)


ATTEMPTS = 3  # a walk that failed on a changing tree is tried again (see capture)
# libgit2's GIT_INDEX_ADD_DISABLE_PATHSPEC_MATCH: paths are literal (no globbing), and
# a directory still matches everything below it.
LITERAL_PATHS = 1 << 1
# Up to this much, objects are written loose (one file each, as git does for small
# changes); beyond it, into one pack. A pack costs two fsyncs and a rename; a loose
# object a file creation each.
LOOSE_MAX_FILES = 64
LOOSE_MAX_BYTES = 1 << 20
_STAGE_MASK = 0x3000  # an index entry's merge stage (0 for every entry we write)


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
    unreadable: list[str] = field(default_factory=list)  # directories end with "/"
    changing: list[str] = field(default_factory=list)  # kept changing while read
    too_deep: list[str] = field(default_factory=list)  # directories not descended into
    nested_repos: list[str] = field(default_factory=list)

    def skipped(self) -> dict[str, list[str]]:
        """What was left out (or kept at its previous version), by reason."""
        kinds = (("oversize", self.oversize), ("unreadable", self.unreadable),
                 ("changing", self.changing), ("too_deep", self.too_deep))
        return {k: v for k, v in kinds if v}


class _TooManyFiles(Exception):
    pass


class _Walk:
    """What one pass over the working tree found (the add_all callback, named paths,
    nested repositories)."""

    def __init__(self, project: Project, index: pygit2.Index, limits: Limits):
        self.root = os.fsencode(str(project.workdir))
        self.saw_gitignore = False
        self.repo = project.repo
        self.index = index
        self.limits = limits
        self.count = len(index)
        self.found: list[tuple[bytes, os.stat_result]] = []  # files and links to store
        self.found_bytes = 0
        self.oversize: list[bytes] = []
        self.unreadable: list[bytes] = []
        self.nested: list[bytes] = []
        self.too_deep: list[bytes] = []
        self.replaced_by_dir: list[bytes] = []  # tracked files that are directories now
        self.dirty = False  # whether the index changed (else it is not rewritten)
        self.report = _progress.get()
        self.error: BaseException | None = None
        self.packed = False  # whether what was found went into a pack
        self.force_pack = False  # pack whatever is found, however little
        self.written: set[bytes] = set()  # objects written into packs
        self.damaged: set[bytes] = set()  # damaged objects the index holds
        self.first = len(index) == 0  # nothing captured before

    def tracked(self, rel: bytes) -> bool:
        return C.git_index_get_bypath(self.index._index, rel, 0) != ffi.NULL

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
            self.count += 1
            if self.count > self.limits.max_files:
                raise _TooManyFiles
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
            os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            vanished = True
        except OSError:
            self.unreadable.append(rel)  # a parent we may not search
            return
        else:
            vanished = _blocking_parent(self.root, rel) is not None
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
        if not self.ignored(rel):
            self.admit(rel)

    def ignored(self, rel: bytes) -> bool:
        try:
            return self.repo.path_is_ignored(os.fsdecode(rel))
        except (UnicodeError, ValueError):
            return False

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


def capture(project: Project, limits: Limits, paths: list[bytes] | None = None) -> Capture:
    """Stage the working tree into the project's index and write its tree object.

    With `paths`, only those files and directories are looked at; every other
    entry stays as the last capture saw it. The caller holds the project lock.
    Raises Refused when the project has more than `limits.max_files` files
    (nothing is written then). Ctrl-C stops it within moments, index untouched.
    """
    with interrupts.deferred():
        return _capture(project, limits, paths)


def _capture(project: Project, limits: Limits, paths: list[bytes] | None) -> Capture:
    index = _read_index(project)
    hidden = _hidden_dirs(project)
    admin = project.store.layout.worktree_admin(project.h16)
    rules = deepdirs.rules(admin) + [r for r in map(deepdirs.literal_rule, hidden) if r]
    listed = heal.listed_ids(project.store.layout)
    with _ignoring(project.repo, rules), _no_gc():
        walk = _walk(project, index, limits, paths, rules, hidden, listed)
        walk.too_deep[:0] = deepdirs.still_there(admin, walk.root)
        changing: list[bytes] = []
        try:
            _store(project, walk, changing)  # a file that kept changing keeps its entry
            for rel in (*walk.oversize, *walk.replaced_by_dir):
                if walk.tracked(rel):
                    C.git_index_remove(index._index, rel, 0)
                    walk.dirty = True
            stamp = _IgnoreStamp(project)
            if walk.saw_gitignore or stamp.changed:
                _drop_now_ignored(walk)
                walk.dirty = True
            interrupts.check()
            known = (_pack_trees(project, index, walk.written, walk.damaged)
                     if walk.packed else None)
            if walk.first or walk.packed:
                # A first (or large) checkpoint also looks for directories the walk
                # could not enter. (Files below a directory that became unreadable
                # later are reported one by one, by every checkpoint.)
                known = known if known is not None else _index_dirs(index)
                walk.unreadable += _unreadable_dirs(walk, known)
            tree_id = index.write_tree()
            if walk.dirty:
                index.write()  # the stat cache; skipped when nothing changed (it is large)
            if listed:
                heal.forget(project.store.layout, listed, walk.written)
        except interrupts.Interrupted:
            index.read(True)
            raise
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
        changing=[decode(p) for p in changing],
        too_deep=[decode(p) + "/" for p in walk.too_deep],
        nested_repos=[decode(p) for p in walk.nested],
    )


def _walk(project: Project, index: pygit2.Index, limits: Limits, paths: list[bytes] | None,
          rules: list[bytes], hidden: list[bytes], listed: set[bytes]) -> _Walk:
    """Find what changed; nothing is written yet."""
    files, dirs = _split_paths(project, paths)
    for attempt in range(ATTEMPTS):
        if attempt:
            index.read(True)  # undo what the failed attempt staged
        walk = _Walk(project, index, limits)
        try:
            for rel in hidden:  # captured before this rule existed: not project content
                walk.dirty |= _remove_below(index, rel)
            if attempt:
                # The last attempt failed on a file libgit2 hashed (a tracked file
                # whose stat changed but not its size) that changed or vanished under
                # it. Make such files plainly modified, so the walk hands them to us
                # unhashed: first the ones changed by now, on a last try every file.
                _mark_modified(walk, everything=attempt + 1 == ATTEMPTS)
            if listed and _mark_modified(walk, oids=listed):
                walk.force_pack = True  # packed objects are found before loose ones
                walk.damaged = listed
            for rel in files:
                walk.stage_one(rel)
            if paths is None or dirs:
                _find_changes(walk, dirs)
            for rel in walk.nested:
                walk.add_nested(rel)
            return walk
        except _TooManyFiles:
            index.read(True)  # drop the partial staging
            raise Refused(
                f"{project.workdir} has more than {limits.max_files} files "
                "(raise max_files or add ignore rules)"
            ) from None
        except interrupts.Interrupted:
            index.read(True)
            raise
        except (OSError, pygit2.GitError) as exc:
            if attempt + 1 < ATTEMPTS and "nesting too deep" in str(exc):
                # Leave the too-deep directories out (and say so), capture the rest.
                new_rules = deepdirs.remember(
                    project.store.layout.worktree_admin(project.h16),
                    deepdirs.find(walk.root, walk.ignored))
                gitextra.add_ignore_rules(project.repo, [r for r in new_rules if r not in rules])
                rules = new_rules
                continue
            if attempt + 1 < ATTEMPTS and _looks_transient(exc):
                continue
            index.read(True)
            raise StoreError(f"could not capture {project.workdir}: {exc}") from exc
    raise AssertionError("unreachable")


@contextmanager
def _no_gc() -> Iterator[None]:
    """Python's cycle collector off while a capture allocates an object or two per file
    (it would traverse them all again and again); nothing here makes cycles."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _hidden_dirs(project: Project) -> list[bytes]:
    """Directories inside the project a capture never enters: rewindfs mounts (their
    checkpoints are not project content) and the checkpoint store itself."""
    root = os.fsencode(str(project.workdir))
    points = mounts.rewindfs_mounts()
    base = project.store.layout.base
    points.append(os.fsencode(str(base.resolve() if base.exists() else base)))
    return mounts.under(root, points)


def _remove_below(index: pygit2.Index, rel: bytes) -> bool:
    before = C.git_index_entrycount(index._index)
    C.git_index_remove_directory(index._index, rel, 0)
    return C.git_index_entrycount(index._index) != before


@contextmanager
def _ignoring(repo: pygit2.Repository, rules: list[bytes]) -> Iterator[None]:
    """`rules` in force for the walk of this handle, and only for it."""
    gitextra.add_ignore_rules(repo, rules)
    try:
        yield
    finally:
        if rules:
            gitextra.clear_ignore_rules(repo)


def _read_index(project: Project) -> pygit2.Index:
    """The project's index, loaded; a damaged one is only a stat cache: start afresh."""
    admin = project.store.layout.worktree_admin(project.h16)
    # We hold the project lock, so an index.lock now is a killed process's.
    remove_stale_lock(admin / "index.lock", 0.0)
    try:
        index = project.repo.index
        index.read(False)
    except pygit2.GitError:
        try:
            os.unlink(admin / "index")
        except FileNotFoundError:
            pass
        index = project.repo.index
        index.read(True)
    return index


def _find_changes(walk: _Walk, dirs: list[bytes]) -> None:
    """Every path (under `dirs`, or everywhere) that is new, changed or deleted since
    the index, as `git add -A` would see it, handed to the walk."""
    if not gitextra.AVAILABLE:  # pragma: no cover - see gitextra
        _add_all(walk, [os.fsdecode(d) for d in dirs])
        return
    with gitextra.index_to_workdir(walk.repo, walk.index, dirs) as deltas:
        for delta in deltas:
            interrupts.check()
            walk.look_at(ffi.string(delta.old_file.path),
                         bool(delta.new_file.flags & gitextra.FLAG_EXISTS))


def _add_all(walk: _Walk, pathspecs: list[str]) -> None:
    """The same through libgit2's add_all (which also builds a patch of every change)."""
    callback = ffi.callback("git_index_matched_path_cb", walk.on_path)
    with StrArray(pathspecs) as spec:
        flags = LITERAL_PATHS if pathspecs else 0
        err = C.git_index_add_all(walk.index._index, spec.ptr, flags, callback, ffi.NULL)
    if walk.error is not None:
        raise walk.error
    check_error(err, io=True)


# -- storing ------------------------------------------------------------------------


class _LooseObjects:
    """A few objects: one loose file each, through libgit2 (which skips existing ones)."""

    def __init__(self, repo: pygit2.Repository):
        self.odb = repo.odb

    def put(self, data: bytes) -> bytes:
        return self.odb.write(pygit2.enums.ObjectType.BLOB, data).raw

    def finish(self) -> None:
        pass

    def abort(self) -> None:
        pass

    written: set[bytes] = set()  # loose objects are only written when missing


class _PackedObjects:
    """Many objects: deflated into one new pack, published by finish()."""

    def __init__(self, project: Project):
        self.pack = PackWriter(project.store.layout.store / "objects")

    def put(self, data: bytes) -> bytes:
        oid = fileread.blob_id(data)
        if oid not in self.pack:
            self.pack.add(oid, BLOB, len(data), deflate(data))
        return oid

    def finish(self) -> None:
        self.pack.finish()

    def abort(self) -> None:
        self.pack.abort()

    @property
    def written(self) -> set[bytes]:
        return self.pack.oids


def _store(project: Project, walk: _Walk, changing: list[bytes]) -> None:
    """Read, hash and write everything the walk found; then add its index entries."""
    if not walk.found:
        return
    walk.dirty = True
    walk.packed = (walk.force_pack or len(walk.found) > LOOSE_MAX_FILES
                   or walk.found_bytes > LOOSE_MAX_BYTES)
    sink = _PackedObjects(project) if walk.packed else _LooseObjects(project.repo)
    total_files, total_bytes = len(walk.found), walk.found_bytes
    report = walk.report
    next_report = time.monotonic() + PROGRESS_SECONDS if report is not None else None
    done_bytes = 0
    staged: list[tuple[bytes, fileread.IndexFields, bytes]] = []
    cap = walk.limits.max_file_size
    mine, helper = walk.found, None
    if walk.packed and splitstore.worth_it(walk.found, walk.found_bytes):
        mine, theirs = splitstore.split(walk.found)
        helper = splitstore.Helper.start(project.store.layout.store / "objects", walk.root,
                                         theirs, cap)
        if helper is None:
            mine = walk.found

    def take(rel: bytes, outcome: int, oid: bytes | None,
             fields: fileread.IndexFields | None) -> None:
        if outcome == fileread.BLOB or outcome == fileread.LINK:
            assert oid is not None and fields is not None
            staged.append((rel, fields, oid))
        elif outcome == fileread.GONE:
            if walk.tracked(rel):
                C.git_index_remove(walk.index._index, rel, 0)
        elif outcome == fileread.CHANGING:
            changing.append(rel)
        elif outcome == fileread.UNREADABLE:
            walk.unreadable.append(rel)
        elif outcome == fileread.OVERSIZE:
            walk.oversize.append(rel)
        elif outcome == fileread.DIRECTORY:
            if walk.tracked(rel):
                walk.replaced_by_dir.append(rel)

    def store_all(items: list[tuple[bytes, os.stat_result]]) -> None:
        nonlocal done_bytes, next_report
        for i, (rel, st) in enumerate(items):
            interrupts.check()
            read = fileread.read_path(walk.root + b"/" + rel, cap, st)
            oid = fields = None
            if read.outcome == fileread.BLOB or read.outcome == fileread.LINK:
                oid = sink.put(read.data)
                done_bytes += len(read.data)
                fields = read.index_fields()
            take(rel, read.outcome, oid, fields)
            if next_report is not None and time.monotonic() >= next_report:
                files, stored = helper.progress() if helper is not None else (0, 0)
                report(Progress("store", i + 1 + files, done_bytes + stored, total_files,
                                total_bytes))
                next_report = time.monotonic() + PROGRESS_SECONDS

    def waiting() -> None:  # for the child, once this process has stored its share
        nonlocal next_report
        interrupts.check()
        if helper is not None and next_report is not None and time.monotonic() >= next_report:
            files, stored = helper.progress()
            report(Progress("store", len(mine) + files, done_bytes + stored, total_files,
                            total_bytes))
            next_report = time.monotonic() + PROGRESS_SECONDS

    try:
        store_all(mine)
        if helper is not None:
            results = helper.results(waiting)
            if results is None:  # the child failed: its share is stored here after all
                store_all(helper.items)
            else:
                for rel, outcome, oid, fields in results:
                    take(rel, outcome, oid, fields)
                    if fields is not None:
                        done_bytes += fields[-1]
        interrupts.check()
        sink.finish()
        walk.written |= sink.written
        if helper is not None:
            walk.written |= helper.publish()
        if walk.damaged:
            heal.drop_loose_copies(project.store.layout, walk.damaged & walk.written)
    except BaseException:
        sink.abort()
        if helper is not None:
            helper.abort()
        raise
    if report is not None:
        report(Progress("store", total_files, done_bytes, total_files, total_bytes))
    entry = ffi.new("git_index_entry *")
    for rel, fields, oid in staged:
        _index_add(walk.index, entry, rel, fields, oid)


def _pack_trees(project: Project, index: pygit2.Index, written: set[bytes],
                listed: set[bytes]) -> set[bytes]:
    """Write the index's trees into a pack of their own, before libgit2's write_tree,
    which then finds them all present instead of writing one loose file per directory.
    Returns the directories the trees hold.

    The trees are built from the index exactly as libgit2 builds them; if they ever
    differed, libgit2 would write its own and these would only be unreferenced."""
    pack = PackWriter(project.store.layout.store / "objects")
    idx = index._index
    dirs: set[bytes] = set()

    def entries() -> Iterator[tuple[bytes, int, bytes]]:
        for i in range(C.git_index_entrycount(idx)):
            e = C.git_index_get_byindex(idx, i)
            if not e.flags & _STAGE_MASK:
                path = ffi.string(e.path)
                _add_parents(dirs, path)
                yield path, e.mode, ffi.buffer(e.id.id, 20)[:]

    try:
        add_trees(pack, entries())
        interrupts.check()
        pack.finish()
    except BaseException:
        pack.abort()
        raise
    written.update(pack.oids)
    if listed:
        heal.drop_loose_copies(project.store.layout, listed & pack.oids)
    return dirs


def _index_dirs(index: pygit2.Index) -> set[bytes]:
    dirs: set[bytes] = set()
    for entry in index:
        _add_parents(dirs, os.fsencode(entry.path))
    return dirs


def _add_parents(dirs: set[bytes], path: bytes) -> None:
    parent = path.rpartition(b"/")[0]
    while parent and parent not in dirs:
        dirs.add(parent)
        parent = parent.rpartition(b"/")[0]


def _unreadable_dirs(walk: _Walk, known: set[bytes]) -> list[bytes]:
    """Directories (not ignored) this process may not list: libgit2's walk passes
    them over in silence. `known` are the directories holding captured files, which
    are readable and not ignored; only the others need an ignore lookup."""
    out: list[bytes] = []
    stack: list[bytes] = [b""]
    while stack:
        rel = stack.pop()
        interrupts.check()
        for child, path in deepdirs.child_dirs(walk.root, rel):
            if child in known:
                stack.append(child)
            elif not walk.ignored(child + b"/"):
                if os.access(path, os.R_OK | os.X_OK):
                    stack.append(child)  # empty, or only ignored or unreadable below
                else:
                    out.append(child + b"/")
    return sorted(out)


def _index_add(index: pygit2.Index, entry, rel: bytes, fields: fileread.IndexFields,
               oid: bytes) -> None:
    """Add one entry with the stat data of what was read (`Read.index_fields`)."""
    path = ffi.new("char[]", rel)
    entry.path = path
    (entry.ctime.seconds, entry.ctime.nanoseconds, entry.mtime.seconds,
     entry.mtime.nanoseconds, entry.dev, entry.ino, entry.mode, entry.uid, entry.gid,
     entry.file_size) = fields
    ffi.memmove(entry.id.id, oid, 20)
    entry.flags = 0
    entry.flags_extended = 0
    check_error(C.git_index_add(index._index, entry))


# -- retries: a tree changing under the walk ---------------------------------------


def _mark_modified(walk: _Walk, *, everything: bool = False,
                   oids: set[bytes] | None = None) -> int:
    """Give tracked entries (those whose stat no longer matches, all, or those holding
    `oids`) a size their file does not have: libgit2 then calls them modified without
    hashing them, and they are read like new files. An entry whose file keeps
    changing stays marked (and keeps its content), so the next checkpoint reads it
    again. Returns how many were marked."""
    idx = walk.index._index
    marked = 0
    for i in range(C.git_index_entrycount(idx)):
        e = C.git_index_get_byindex(idx, i)
        if oids is not None:
            if ffi.buffer(e.id.id, 20)[:] in oids:
                e.file_size = _unlike(e.file_size, e.file_size)
                marked += 1
            continue
        try:
            st = os.lstat(walk.root + b"/" + ffi.string(e.path))
        except OSError:
            if everything:  # gone now, maybe back (at its old size) when the walk looks
                e.file_size = _unlike(e.file_size, e.file_size)
            continue
        size = st.st_size & 0xFFFFFFFF
        if everything or (e.file_size != size
                          or e.mtime.seconds != fileread.int32(st.st_mtime_ns // 1_000_000_000)
                          or e.mtime.nanoseconds != st.st_mtime_ns % 1_000_000_000
                          or e.ino != st.st_ino & 0xFFFFFFFF):
            e.file_size = _unlike(size, e.file_size)
            marked += 1
    walk.dirty |= marked > 0
    return marked


def _unlike(a: int, b: int) -> int:
    """A 32-bit size other than `a` and `b`, and never 0 (an entry of size 0 is
    "unknown", which libgit2 hashes to settle)."""
    size = max(a, b) + 1
    return size if size <= 0xFFFFFFFF else 1 if 1 not in (a, b) else 2


# -- helpers ------------------------------------------------------------------------


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


_TRANSIENT = ("not found", "no such file", "could not find", "changed before",
              "failed to read", "error reading", "could not read", "read error", "short read")


def _looks_transient(exc: BaseException) -> bool:
    """A file deleted, replaced or rewritten between the walk and its hashing."""
    text = str(exc).lower()
    return isinstance(exc, FileNotFoundError) or any(t in text for t in _TRANSIENT)


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
