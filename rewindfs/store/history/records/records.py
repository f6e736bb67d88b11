"""What a checkpoint commit says, remembered: one record per commit in a per-project file,
so listing, numbering, `rewind log` and status read one file instead of every commit.

A record holds only what can never change about its commit: the recorded first parent
(read from the commit itself, so a prune boundary never hides it), the tree, time,
reason and trailers, the change stats when the commit carries none, and the paths it
changed against that parent. Records therefore never go stale; only a chain built
from them could, so no chain is stored: it is rebuilt on every read from the live ref
tip and the live prune boundary (store.history.chain). Records missing for commits
written since the last read — a checkpoint, Hermes moving the same ref, a delete
recreating newer checkpoints, an adopt — are read from the objects and appended, so
a read costs what changed since the previous one, not the length of the history.

Records are never trusted over the objects. Each notes where its commit was when it
was read: the size and mtime of its loose object file, or "packed" under the packs the
file lists (each pack's size and mtime). A record is used only while that file is
untouched (what git's index assumes of a working tree file); a commit whose loose file
changed, or whose packs did (gc, damage), is read again — and a commit that can no
longer be read ends the fast path, so the objects decide what is wrong, the one way
they always do (store.history.chain). The file is private, one record a line with a
MAC of the line keyed by the store's own secret: a damaged or edited line is skipped (its
commit is read again), a file of another version is rebuilt. Nothing is lost by deleting
it.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import pygit2

from rewindfs.store.history import bounds
from rewindfs.store.history.records import recordfile, recordtail
from rewindfs.store.history.records.recordfile import Record
from rewindfs.store.history.trailers import STATS_TRAILER, parse_message
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout, is_remote_key, pack_files

MAX_CHANGES = 2000  # a bigger change is not indexed: `rewind log` compares its trees
ZERO = "0" * 40
GITLINK = int(pygit2.enums.FileMode.COMMIT)
TREE = pygit2.enums.ObjectType.TREE


def read_commit(repo: pygit2.Repository, commit_id: str, objects: Path,
                untrusted: bool = False) -> Record:
    """The record of `commit_id`, read from the objects in `objects` (KeyError, GitError,
    ValueError when it cannot be read). `untrusted` (a fetched project's): its trees are
    measured first (store.history.bounds), and one over its bounds is neither walked nor
    compared with its parent (no stats beyond a root's file count, no changes)."""
    commit = repo[commit_id].peel(pygit2.Commit)
    if untrusted and not _within_bounds(repo, commit):
        return _unmeasured(repo, commit, objects)
    reason, trailers = parse_message(commit.message)
    parent = recorded_parent(commit)
    parent_tree = None
    if parent is not None:
        try:
            parent_tree = str(repo[parent].peel(pygit2.Commit).tree_id)
        except (KeyError, ValueError, pygit2.GitError):
            parent_tree = None
    tree = str(commit.tree_id)
    stats = None
    if STATS_TRAILER not in trailers and (parent is None or parent_tree):
        from rewindfs.store.history.files.treestats import tree_stats  # (Hermes's)

        s = tree_stats(repo, parent_tree, tree)
        stats = [s.files_changed, s.insertions, s.deletions]
    changes = _changes(repo, parent_tree, tree) if parent_tree is not None else None
    trees = _new_trees(commit.tree, changes) if changes is not None else None
    if trees is None:
        changes = None
    return Record(str(commit.id), tree, parent, commit.author.time, commit.author.offset,
                  commit.commit_time, reason, trailers, stats, changes, trees,
                  _where(objects, str(commit.id)))


def _within_bounds(repo: pygit2.Repository, commit: pygit2.Commit) -> bool:
    trees = [str(commit.tree_id)]
    parent = recorded_parent(commit)
    if parent is not None:
        try:
            trees.append(str(repo[parent].peel(pygit2.Commit).tree_id))
        except (KeyError, ValueError, pygit2.GitError):
            pass
    return all(bounds.measure(repo, tree).ok for tree in trees)


def _unmeasured(repo: pygit2.Repository, commit: pygit2.Commit, objects: Path) -> Record:
    """The record of a commit whose trees are over their bounds: what its message says,
    and its file count (exact however big, from the measure) when it is a root."""
    reason, trailers = parse_message(commit.message)
    parent = recorded_parent(commit)
    stats = None
    if STATS_TRAILER not in trailers:
        size = bounds.measure(repo, str(commit.tree_id)).size if parent is None else None
        stats = [size.files if size is not None else 0, 0, 0]
    return Record(str(commit.id), str(commit.tree_id), parent, commit.author.time,
                  commit.author.offset, commit.commit_time, reason, trailers, stats, None,
                  None, _where(objects, str(commit.id)))


def _where(objects: Path, commit_id: str) -> list[int]:
    try:
        st = os.stat(f"{objects}/{commit_id[:2]}/{commit_id[2:]}")
    except OSError:
        return []
    return [st.st_size, st.st_mtime_ns]


def recorded_parent(commit: pygit2.Commit) -> str | None:
    """The first parent the commit object names (libgit2 hides it past a prune boundary)."""
    try:
        head = commit.read_raw().split(b"\n\n", 1)[0]
    except pygit2.GitError:
        return None
    for line in head.split(b"\n"):
        if line.startswith(b"parent "):
            return line[7:47].decode("ascii")
    return None


def _changes(repo: pygit2.Repository, old_tree: str, new_tree: str) -> list[str] | None:
    """[path, new blob ("" where it went), ...] between two trees, as a diff without
    type changes lists them (a file that became a link: gone, then new)."""
    from rewindfs.store.history.files import trees  # (only a new checkpoint's record)

    deltas: list[tuple[str, int, str]] = []   # (path, the side's mode, new blob or "")
    for change in trees.changes(repo, old_tree, new_tree):
        old, new = change.old, change.new
        if old is not None and new is not None and trees.kind(old.mode) != trees.kind(new.mode):
            deltas += [(old.path, old.mode, ""), (new.path, new.mode, new.oid)]
        elif new is not None:
            deltas.append((new.path, new.mode, new.oid))
        elif old is not None:
            deltas.append((old.path, old.mode, ""))
    if len(deltas) > MAX_CHANGES:
        return None
    out = []
    for path, mode, blob in deltas:
        if mode != GITLINK:   # (a nested repository's commit: never a change in log)
            out += [os.fsdecode(path), blob]
    return out


def _new_trees(root: pygit2.Tree, changes: list[str]) -> list[str] | None:
    """Each directory looked up in its parent, parents first (never from the root again:
    a path 20,000 levels deep is 20,000 lookups, not 200 million)."""
    dirs = {os.path.dirname(path) for path in changes[0::2]}
    for d in list(dirs):
        while d:
            d = os.path.dirname(d)
            dirs.add(d)
    out = [str(root.id)]
    found: dict[str, pygit2.Tree] = {"": root}
    for d in sorted(dirs - {""}):
        parent = found.get(os.path.dirname(d))
        if parent is None:
            continue  # gone with everything in it
        try:
            entry = parent[os.path.basename(d)]
        except KeyError:
            continue
        except (UnicodeError, ValueError):
            return None  # a name libgit2 cannot be asked for: the closure says it
        if entry.type == TREE:
            found[d] = entry  # pygit2 hands a tree entry out as the Tree itself
            out.append(str(entry.id))
    return out


# -- the file (its format: store.history.records.recordfile) ---------------------------------

Packs = recordfile.Packs
_memo: dict[str, tuple[tuple[int, int, int], recordfile.Parsed]] = {}
_memo_lock = threading.Lock()
cache_path = recordfile.cache_path


def load(path: Path) -> tuple[dict[str, Record], Packs, int]:
    """(records by commit id, the packs they were read under, lines in the file); empty
    when missing or unreadable."""
    found = parsed(path)
    return found.records, found.packs, found.lines


def parsed(path: Path) -> recordfile.Parsed:
    """The whole file, parsed (remembered while the file is unchanged)."""
    try:
        st = os.stat(path)
    except OSError:
        return recordfile.Parsed({}, {}, 0, False)
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _memo_lock:
        known = _memo.get(str(path))
    if known is not None and known[0] == key:
        return known[1]
    try:
        fd = private.open_file(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read()
    except OSError:
        return recordfile.Parsed({}, {}, 0, False)
    found = recordfile.parse(raw, recordfile.key_for(path))
    with _memo_lock:
        _memo[str(path)] = (key, found)
    return found


def append(path: Path, records: list[Record], packs: Packs | None) -> None:
    """Add records (and, first, the packs they were read under) to the file, created when
    missing; a cache, so failures are ignored."""
    if records:
        recordfile.append(path, ([recordfile.packs_line(packs)] if packs else [])
                          + [recordfile.encode(r) for r in records])


rewrite = recordfile.rewrite


class Recall:
    """A project's records as a lookup: each checked against the objects before it is
    used, commits not yet recorded (or whose object file changed) read from the objects,
    and what was read written back by `save`."""

    def __init__(self, repo: pygit2.Repository, store: Path, h16: str, *, lazy: bool = False):
        self.repo = repo
        self.objects = store / "objects"
        self.path = cache_path(store, h16)
        self.untrusted = is_remote_key(h16)  # fetched from a remote: trees measured first
        self.fresh: list[Record] = []
        self._packs_now: Packs | None = None
        self._packs_ok: bool | None = None
        # Lazy: records looked up from the end of the file, one by one (listpage), under
        # the packs its summary names; else the whole file, parsed.
        self.lazy = lazy
        self.tail = recordtail.Tail(self.path) if lazy else None
        if self.tail is not None:
            self.known, self.lines = {}, 0
            self.summary, self.packs = self.tail.summary() if self.tail.ok else (None, {})
            self.foreign = self.stale = not self.tail.ok and self.tail.size > 0
            return
        found = parsed(self.path)
        self.known, self.packs, self.lines = found.records, found.packs, found.lines
        self.summary = found.summary
        self.foreign = found.foreign  # another version, or not ours: rewritten
        self.stale = found.foreign  # a record failed its check: rewritten

    def widen(self) -> None:
        """A lazy reader asked for most of a long chain after all (a whole listing): its
        further lookups answered from the whole file, parsed at once (one JSON parse, not
        one a record). Still lazy: it never rewrites the file."""
        if self.tail is None:
            return
        found = parsed(self.path)
        if found.foreign:
            return
        self.known = found.records
        self.tail.close()
        self.tail = None

    def get(self, commit_id: str, newer: bool = False) -> Record | None:
        """The commit's record; None when the commit cannot be read. `newer`: taken since
        the summary this lazy reader holds (recordfile.Tail.get)."""
        record = self.tail.get(commit_id, newer) if self.tail is not None \
            else self.known.get(commit_id)
        if record is not None:
            if self._intact(record):
                return record
            self.stale = True
            try:  # the object file changed: the record stands if the object still reads
                self.repo.odb.read(commit_id)
            except (KeyError, ValueError, pygit2.GitError):
                return None
            record = dataclasses.replace(record, where=_where(self.objects, commit_id))
        else:
            try:
                record = read_commit(self.repo, commit_id, self.objects, self.untrusted)
            except (KeyError, ValueError, pygit2.GitError):
                return None
        self.fresh.append(record)
        return record

    def _intact(self, record: Record) -> bool:
        if not record.where:
            return self.packs_ok()
        return recordfile.loose_unchanged(self.objects, record)

    def packs_now(self) -> Packs:
        if self._packs_now is None:
            self._packs_now = pack_files(self.objects)
        return self._packs_now

    def packs_ok(self) -> bool:
        """Every pack the records were read under is still there, untouched."""
        if self._packs_ok is None:
            now = self.packs_now()
            self._packs_ok = all(now.get(name) == stat for name, stat in self.packs.items())
        return self._packs_ok

    def rewrites(self, live: list[Record]) -> bool:
        """Whether `save` rewrites the file (dropping its summaries)."""
        return bool(self.fresh) and not self.lazy and (
            self.stale or not self.packs_ok()
            or self.lines + len(self.fresh) > 4 * len(live) + COMPACT_SLACK)

    def save(self, live: list[Record], summary: recordfile.Summary | None = None) -> None:
        """Write back what was read: appended, or the file rewritten with `live` (and what
        else was read) when a record failed its check or most lines are of commits no
        longer reached (never by a lazy reader: it has not read the file whole); then
        `summary`, naming the packs the file's records were read under."""
        lines: list[bytes] = []
        packs = self.packs
        if self.fresh:
            ids = {r.id for r in live}
            if self.rewrites(live):
                rewrite(self.path, live + [r for r in self.fresh if r.id not in ids],
                        self.packs_now())
                packs = self.packs_now()
            elif not self.foreign:
                packed = any(not r.where for r in self.fresh)
                new_packs = {n: s for n, s in self.packs_now().items()
                             if self.packs.get(n) != s}
                if packed and new_packs:
                    lines.append(recordfile.packs_line(new_packs))
                    packs = {**packs, **new_packs}
                lines += [recordfile.encode(r) for r in self.fresh]
        if summary is not None and not (self.lazy and self.foreign):
            summary.packs = packs
            lines.append(summary.line())
        recordfile.append(self.path, lines)


COMPACT_SLACK = 256  # records of commits no chain reaches, kept before the file is rewritten


def forget(layout: Layout, h16: str) -> None:
    """Remove a project's records (the project is gone)."""
    path = cache_path(layout.store, h16)
    try:
        path.unlink()
    except OSError:
        pass
    with _memo_lock:
        _memo.pop(str(path), None)
