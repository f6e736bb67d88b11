"""Storing what the walk found: packs or a few loose objects, then index entries.

Each file is read once (fileread) and written into a pack (packwrite) or as a loose
object, half of a large capture on a second core (splitstore); index entries are
added only once their objects are on disk.

Under the store's size cap (`Limits.store_cap`), a capture whose packs alone take more
than the whole cap is refused before they are visible: the packs are measured as they
are written (and the second core's with them before either is published), so the work
stops as soon as the cap is passed, and nothing is left behind.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pygit2
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

from rewindfs.errors import Refused
from rewindfs.store.capture import fileread, interrupts, splitstore
from rewindfs.store.capture.progress import PROGRESS_SECONDS, Progress
from rewindfs.store.capture.walk import Walk
from rewindfs.store.objects import heal
from rewindfs.store.objects.packwrite import BLOB, PackWriter, add_trees, deflate
from rewindfs.store.objects.repo import Project

# Up to this much, objects are written loose (one file each, as git does for small
# changes); beyond it, into one pack. A pack costs two fsyncs and a rename; a loose
# object a file creation each.
LOOSE_MAX_FILES = 64


LOOSE_MAX_BYTES = 1 << 20


_STAGE_MASK = 0x3000  # an index entry's merge stage (0 for every entry we write)


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
    size = 0  # a loose capture is at most LOOSE_MAX_BYTES, and never more than the cap


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

    @property
    def size(self) -> int:
        return self.pack.size


def store_found(project: Project, walk: Walk, changing: list[bytes]) -> None:
    """Read, hash and write everything the walk found; then add its index entries."""
    if not walk.found:
        return
    walk.dirty = True
    store_cap = walk.limits.store_cap
    walk.packed = (walk.force_pack or len(walk.found) > LOOSE_MAX_FILES
                   or walk.found_bytes > LOOSE_MAX_BYTES
                   or 0 < store_cap < walk.found_bytes)  # measured as it is written
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
                if store_cap and sink.size > store_cap:
                    raise over_the_cap(project, walk.found_bytes, store_cap)
            take(rel, read.outcome, oid, fields)
            if next_report is not None and time.monotonic() >= next_report:
                files, stored = helper.progress() if helper is not None else (0, 0)
                report(Progress("store", i + 1 + files, done_bytes + stored, total_files,
                                total_bytes))
                next_report = time.monotonic() + PROGRESS_SECONDS

    def waiting() -> None:  # for the child, once this process has stored its share
        nonlocal next_report
        interrupts.poll()  # waiting is no work: the child's progress counts (splitstore)
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
                if store_cap and sink.size + helper.sealed_bytes() > store_cap:
                    raise over_the_cap(project, walk.found_bytes, store_cap)
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


def over_the_cap(project: Project, found_bytes: int, store_cap: int) -> Refused:
    """The one line a capture larger than the store's whole size cap is refused with."""
    return Refused(f"{project.workdir}: checkpoint refused: its new and changed files "
                   f"({_mib(found_bytes)}) take more than the store's whole size cap "
                   f"(max_total_size_mb is {_mib(store_cap, unit=False)}); nothing was "
                   "recorded (raise the cap, or leave the big files out with ignore rules)")


def _mib(n: int, unit: bool = True) -> str:
    value = n / (1024 * 1024)
    text = f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.1f}"
    return f"{text} MiB" if unit else text


def pack_trees(project: Project, index: pygit2.Index, written: set[bytes],
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


def index_dirs(index: pygit2.Index) -> set[bytes]:
    dirs: set[bytes] = set()
    for entry in index:
        _add_parents(dirs, os.fsencode(entry.path))
    return dirs


def _add_parents(dirs: set[bytes], path: bytes) -> None:
    parent = path.rpartition(b"/")[0]
    while parent and parent not in dirs:
        dirs.add(parent)
        parent = parent.rpartition(b"/")[0]


def add_entry(index: pygit2.Index, rel: bytes, fields: fileread.IndexFields, oid: bytes
              ) -> None:
    """Add one entry to `index` (see `_index_add`)."""
    _index_add(index, ffi.new("git_index_entry *"), rel, fields, oid)


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
