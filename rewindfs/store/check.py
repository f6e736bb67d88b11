"""`rewind check`: verify the whole store, say what is damaged and what can be repaired.

Like `git fsck` / `restic check`, in the order a failure would matter:
the repository itself (HEAD, config, `shallow`), refs (loose and packed; each must
name a readable commit), object files (every loose object inflated and hashed in
Python, never by libgit2; every pack and pack index against its checksum), then
reachability: every object of every checkpoint, label and note must exist. Then
rewindfs's own files: project records, per-project admin dirs and their indexes
(stat caches), restore journals and step/action logs, and leftovers (stale lock
files, a commit-graph naming pruned commits).

Only what cannot lose anything is repaired (`repair`): a damaged stat-cache index
is removed (the next checkpoint rebuilds it), stale lock files and temp files of
killed writers are removed, a stale commit-graph or multi-pack-index (caches git
rebuilds) is removed, unparsable lines of `shallow` are dropped, a project admin dir
whose bookkeeping files are damaged is rewritten from its project record, and damaged
loose objects are listed for the next checkpoint to write again (store.heal).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from rewindfs.errors import StoreDamaged
from rewindfs.store import heal, loose, odbguard, packs
from rewindfs.store.layout import LABELS_PREFIX, NOTES_PREFIX, REFS_PREFIX, Layout, project_hash
from rewindfs.store.locks import file_lock, write_atomic

STALE_SECONDS = 60.0  # git and rewindfs hold their lock and temp files for milliseconds
_HEX = frozenset("0123456789abcdef")


@dataclass
class Problem:
    path: Path
    problem: str
    repair: str | None = None  # what --repair does about it; None: cannot be repaired safely
    fix: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    harmless: bool = False  # does not affect reads (stale locks, caches): not damage

    def as_error(self) -> StoreDamaged:
        return StoreDamaged(self.path, self.problem)


@dataclass
class Report:
    store: Path
    problems: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def damaged(self) -> list[Problem]:
        return [p for p in self.problems if not p.harmless]

    @property
    def clean(self) -> bool:
        return not self.problems


def verify(layout: Layout) -> Report:
    """Every check, in order; the report lists each problem once."""
    report = Report(layout.store)
    if not (layout.store / "HEAD").exists() and not (layout.store / "objects").is_dir():
        return report  # no store yet: nothing to check
    seen: set[tuple[str, str]] = set()
    for problem in _all_checks(layout, report.counts):
        key = (str(problem.path), problem.problem)
        if key not in seen:
            seen.add(key)
            report.problems.append(problem)
    return report


def first_problem(layout: Layout) -> StoreDamaged | None:
    """The first damage found (cheap checks first), for naming it in an error."""
    if not layout.store.is_dir():
        return None
    for problem in _all_checks(layout, {}):
        if not problem.harmless:
            return problem.as_error()
    return None


def repair(report: Report) -> list[Problem]:
    """Apply every safe repair in `report`; returns the problems repaired."""
    done = []
    for problem in report.problems:
        if problem.fix is not None:
            problem.fix()
            done.append(problem)
    return done


def list_for_healing(layout: Layout, report: Report) -> int:
    """List the damaged loose objects in `report` for the next checkpoint to write again
    (store.heal); returns how many. Part of `--repair`: nothing is deleted."""
    objects = layout.store / "objects"
    ids = [p.path.parent.name + p.path.name for p in report.damaged
           if p.path.parent.parent == objects and _is_oid(p.path.parent.name + p.path.name)]
    if ids:
        heal.note(layout, ids)
    return len(ids)


def index_problems(layout: Layout) -> Iterator[StoreDamaged]:
    for problem in _admin_dirs(layout, {}):
        if problem.path.name == "index":
            yield problem.as_error()


# -- the checks ---------------------------------------------------------------------


def _all_checks(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    yield from _repository(layout)
    damaged_objects: dict[str, Problem] = {}
    refs = yield from _refs(layout, counts)
    yield from _pack_files(layout, counts)
    for problem in _loose_objects(layout, counts):
        damaged_objects[problem.path.parent.name + problem.path.name] = problem
        yield problem
    yield from _reachability(layout, refs, damaged_objects, counts)
    yield from _admin_dirs(layout, counts)
    yield from _records(layout, counts)
    yield from _logs(layout)
    yield from _leftovers(layout)
    yield from _commit_graph(layout)


def _repository(layout: Layout) -> Iterator[Problem]:
    store = layout.store
    head = store / "HEAD"
    text = _read_text(head)
    if text is None or not (text.startswith("ref: refs/") or _is_oid(text.strip())):
        yield Problem(head, "missing or corrupt",
                      "rewrite it (`ref: refs/heads/main`; nothing reads it)",
                      lambda: write_atomic(head, "ref: refs/heads/main\n"))
    config = store / "config"
    try:
        pygit2.Config(str(config))
    except (pygit2.GitError, OSError, ValueError) as exc:
        yield Problem(config, f"unparsable: {' '.join(str(exc).split())}")
    shallow = store / "shallow"
    text = _read_text(shallow)
    if text is not None:
        bad = [line for line in text.splitlines() if line.strip() and not _is_oid(line.strip())]
        if bad:
            def drop_bad(path: Path = shallow) -> None:
                current = _read_text(path) or ""
                kept = [ln for ln in current.splitlines() if _is_oid(ln.strip())]
                write_atomic(path, "".join(f"{ln.strip()}\n" for ln in kept))

            yield Problem(shallow, f"{len(bad)} line(s) that are not commit ids",
                          "drop those lines", drop_bad)


def _refs(layout: Layout, counts: dict[str, int]):
    """Yields problems; returns {ref name: target id} of the refs that parse."""
    store = layout.store
    refs: dict[str, str] = {}
    packed = store / "packed-refs"
    text = _read_text(packed)
    if text is not None:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line or line.startswith("#"):
                continue
            if line.startswith("^") and _is_oid(line[1:].strip()):
                continue
            oid, _, name = line.partition(" ")
            if _is_oid(oid) and name.startswith("refs/"):
                refs[name] = oid
            else:
                yield Problem(packed, f"corrupt at line {number}")
                break
    root = store / "refs"
    for path in sorted(root.rglob("*")) if root.is_dir() else []:
        if not path.is_file() or path.name.endswith(".lock"):
            continue
        name = str(path.relative_to(store))
        content = _read_text(path)
        value = (content or "").strip()
        if _is_oid(value):
            refs[name] = value
        elif value.startswith("ref: "):
            continue
        else:
            yield Problem(path, "corrupt ref file (not a commit id)")
            refs.pop(name, None)
    counts["refs"] = len(refs)
    return refs


def _pack_files(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    objects = layout.store / "objects"
    idxs = packs.indexes(objects)
    counts["packs"] = len(idxs)
    for idx in idxs:
        problem = packs.index_problem(idx)
        if problem:
            yield Problem(idx, f"pack index {problem}")
        pack = idx.with_suffix(".pack")
        if pack.exists():
            problem = packs.pack_problem(pack)
            if problem:
                yield Problem(pack, f"pack {problem}")
        else:
            yield Problem(pack, "pack file missing (its index is there)")


def _loose_objects(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    objects = layout.store / "objects"
    count = 0
    for oid in loose.all_ids(objects):
        count += 1
        path = loose.path_of(objects, oid)
        try:
            loose.read_verified(path, oid)
        except StoreDamaged as exc:
            yield Problem(path, exc.problem)
        except FileNotFoundError:
            continue  # removed by a concurrent gc
        except OSError as exc:
            yield Problem(path, f"unreadable: {exc.strerror}")
    counts["loose objects"] = count


def _reachability(layout: Layout, refs: dict[str, str], damaged: dict[str, Problem],
                  counts: dict[str, int]) -> Iterator[Problem]:
    """Every object of every checkpoint, label and note is present and readable."""
    store = layout.store
    objects = store / "objects"
    try:
        repo = pygit2.Repository(str(store), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError, ValueError):
        return  # HEAD/config damage, already reported
    odbguard.install(repo, objects)
    present = _present_ids(objects)
    boundaries = _boundaries(store)
    seen: set[str] = set()
    checkpoints = 0

    def missing(oid: str, what: str) -> Problem:
        return Problem(loose.path_of(objects, oid), f"missing {what}")

    def unreadable(oid: str, what: str, exc: BaseException) -> Problem:
        if oid in damaged:
            return damaged[oid]
        pack = packs.containing(objects, oid)
        where = pack if pack is not None else loose.path_of(objects, oid)
        return Problem(where, f"{what} {oid[:8]} unreadable: {' '.join(str(exc).split())}")

    def tree_problems(tree_id: str, what: str) -> Iterator[Problem]:
        stack = [(tree_id, what)]
        while stack:
            oid, label = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            if oid not in present:
                yield missing(oid, label)
                continue
            if oid in damaged:
                yield damaged[oid]
                continue
            try:
                tree = repo[oid]
            except (pygit2.GitError, KeyError, ValueError) as exc:
                yield unreadable(oid, label, exc)
                continue
            for entry in tree:
                child = str(entry.id)
                name = f"{label}/{entry.raw_name.decode(errors='replace')}"
                if entry.filemode == pygit2.enums.FileMode.TREE:
                    stack.append((child, name))
                elif entry.filemode != pygit2.enums.FileMode.COMMIT and child not in seen:
                    seen.add(child)
                    if child not in present:
                        yield missing(child, f"file {name}")
                    elif child in damaged:
                        yield damaged[child]

    for name, tip in sorted(refs.items()):
        if not name.startswith((REFS_PREFIX, LABELS_PREFIX, NOTES_PREFIX)):
            continue
        ref_path = store / name if (store / name).exists() else store / "packed-refs"
        oid: str | None = tip
        first = True
        while oid is not None and oid not in seen:
            what = f"commit of {name}" if first else f"parent commit (history of {name})"
            if oid not in present:
                if first:
                    yield Problem(ref_path, f"points at missing commit {oid[:8]}")
                elif name.startswith(REFS_PREFIX):
                    yield missing(oid, what)
                break
            seen.add(oid)
            if oid in damaged:
                yield damaged[oid]
                break
            try:
                commit = repo[oid]
                if not isinstance(commit, pygit2.Commit):
                    yield Problem(ref_path, f"points at a {commit.type_str}, not a commit")
                    break
            except (pygit2.GitError, KeyError, ValueError) as exc:
                yield unreadable(oid, what, exc)
                break
            checkpoints += 1
            yield from tree_problems(str(commit.tree_id), f"checkpoint {oid[:8]}")
            first = False
            # Labels and notes name one commit each; a project's history goes on to
            # its prune boundary.
            if not name.startswith(REFS_PREFIX) or oid in boundaries or not commit.parent_ids:
                break
            oid = str(commit.parent_ids[0])
    counts["checkpoints"] = checkpoints
    counts["objects checked"] = len(seen)


def _admin_dirs(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    """worktrees/<h16>/: the files that make it a git worktree, and its index."""
    root = layout.store / "worktrees"
    dirs = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    counts["projects"] = len(dirs)
    for admin in dirs:
        h16 = admin.name
        broken = []
        if not (_read_text(admin / "HEAD") or "").startswith("ref: "):
            broken.append("HEAD")
        if (_read_text(admin / "commondir") or "").strip() != "../..":
            broken.append("commondir")
        gitdir = _read_bytes(admin / "gitdir")
        if not gitdir or not gitdir.rstrip(b"\n").endswith(b"/.git"):
            broken.append("gitdir")
        if broken:
            workdir = _record_workdir(layout, h16)
            fix = repair_text = None
            if workdir is not None and project_hash(workdir) == h16:
                repair_text = "rewrite them from the project record"

                def fix(admin: Path = admin, workdir: Path = workdir, h16: str = h16) -> None:
                    from rewindfs.store.store import rewrite_admin_files

                    rewrite_admin_files(admin, h16, workdir)
            yield Problem(admin, f"project admin dir: {', '.join(broken)} damaged", repair_text,
                          fix)
        index = admin / "index"
        problem = _index_problem(index)
        if problem:
            yield Problem(index, f"stat cache {problem}",
                          "remove it (the next checkpoint rebuilds it)",
                          lambda index=index, h16=h16: _remove_index(layout, h16, index))


def _records(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    folder = layout.store / "projects"
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    counts["project records"] = len(files)
    for path in files:
        raw = _read_bytes(path)
        try:
            data = json.loads((raw or b"").decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            yield Problem(path, "project record is not valid UTF-8 JSON")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("workdir"), str):
            yield Problem(path, "project record has no workdir")


def _logs(layout: Layout) -> Iterator[Problem]:
    """JSON-lines files: restore journals, agent step logs, pending actions, write ledgers.

    Their readers skip a line they cannot parse (a writer killed mid-line leaves one),
    so such lines are reported, not counted as damage."""
    store = layout.store
    files = [*store.glob("worktrees/*/restores.jsonl"), *store.glob("steps/*.jsonl"),
             *store.glob("actions/*.jsonl"), *store.glob("ledger/*.jsonl")]
    for path in sorted(files):
        raw = _read_bytes(path)
        if raw is None:
            continue
        bad = []
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                if not isinstance(json.loads(line.decode("utf-8")), dict):
                    raise ValueError
            except (UnicodeDecodeError, ValueError):
                bad.append(number)
        if bad:
            lines = ", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else "")
            yield Problem(path, f"unreadable line(s) {lines}, skipped by rewindfs",
                          harmless=True)


def _leftovers(layout: Layout) -> Iterator[Problem]:
    """Lock and temp files of killed writers (harmless, but a lock blocks the next writer)."""
    store = layout.store
    now = time.time()
    candidates = [*store.glob("*.lock"), *store.glob("refs/**/*.lock"),
                  *store.glob("worktrees/*/*.lock"), *store.glob("objects/??/tmp_obj_*"),
                  *store.glob("objects/pack/tmp_*"), *store.glob("objects/info/*.lock")]
    for path in sorted(candidates):
        try:
            age = now - path.lstat().st_mtime
        except OSError:
            continue
        if age < STALE_SECONDS:
            continue
        yield Problem(path, f"stale {'lock' if path.suffix == '.lock' else 'temporary'} file "
                      f"left by a killed process ({int(age)} s old)", "remove it",
                      lambda path=path: path.unlink(missing_ok=True), harmless=True)


def _commit_graph(layout: Layout) -> Iterator[Problem]:
    """A commit-graph (written by `git gc`, e.g. Hermes's) that names commits pruned since
    makes `git fsck` fail; it is only a cache, so removing it loses nothing."""
    info = layout.store / "objects" / "info"
    files = [info / "commit-graph", *sorted((info / "commit-graphs").glob("*.graph"))]
    files = [f for f in files if f.is_file()]
    if not files:
        return
    present = _present_ids(layout.store / "objects")
    for graph in files:
        ids = _graph_commits(graph)
        stale = None if ids is None else sum(1 for oid in ids if oid not in present)
        if ids is None or stale:
            why = "unreadable" if ids is None else f"names {stale} commit(s) no longer in the store"
            yield Problem(graph, f"commit-graph {why}", "remove it (a cache git rebuilds)",
                          lambda: remove_commit_graphs(layout), harmless=True)
            return


def remove_commit_graphs(layout: Layout) -> None:
    """Remove every commit-graph file (a cache: git rebuilds it, libgit2 works without).

    Best effort: a git writing a new graph meanwhile keeps its files."""
    info = layout.store / "objects" / "info"
    chain = info / "commit-graphs"
    for path in [info / "commit-graph", *(chain.glob("*") if chain.is_dir() else [])]:
        with contextlib.suppress(OSError):
            path.unlink()
    with contextlib.suppress(OSError):
        chain.rmdir()


# -- helpers ------------------------------------------------------------------------


def _graph_commits(path: Path) -> list[str] | None:
    """Commit ids listed in a commit-graph file (its OIDL chunk), None if unparsable."""
    data = _read_bytes(path)
    if data is None or len(data) < 8 or data[:4] != b"CGPH":
        return None
    chunks = data[6]
    table = 8
    try:
        for i in range(chunks):
            cid, offset = struct.unpack(">4sQ", data[table + 12 * i: table + 12 * i + 12])
            if cid == b"OIDL":
                end = struct.unpack(">Q", data[table + 12 * i + 16: table + 12 * i + 24])[0]
                raw = data[offset:end]
                if len(raw) % 20:
                    return None
                return [raw[j: j + 20].hex() for j in range(0, len(raw), 20)]
    except struct.error:
        return None
    return None


def _present_ids(objects: Path) -> set[str]:
    present = set(loose.all_ids(objects))
    for idx in packs.indexes(objects):
        present.update(packs.listed_ids(idx))
    return present


def _boundaries(store: Path) -> set[str]:
    text = _read_text(store / "shallow") or ""
    return {line.strip() for line in text.splitlines() if _is_oid(line.strip())}


def _index_problem(index: Path) -> str | None:
    data = _read_bytes(index)
    if data is None:
        return None  # no index yet: the next checkpoint writes one
    if len(data) < 12 + 20 or data[:4] != b"DIRC":
        return "is not an index (bad header or too short)"
    if struct.unpack(">I", data[4:8])[0] not in (2, 3, 4):
        return "has an unknown version"
    if hashlib.sha1(data[:-20]).digest() != data[-20:]:
        return "fails its checksum (truncated or overwritten)"
    return None


def _remove_index(layout: Layout, h16: str, index: Path) -> None:
    # Under the project lock: a checkpoint writing this index meanwhile must not lose it.
    with file_lock(layout.lock_file(h16), timeout=10):
        if _index_problem(index):
            index.unlink(missing_ok=True)


def _record_workdir(layout: Layout, h16: str) -> Path | None:
    raw = _read_bytes(layout.project_record(h16))
    try:
        data = json.loads((raw or b"").decode("utf-8"))
        return Path(data["workdir"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None


def _is_oid(text: str) -> bool:
    return len(text) == 40 and set(text) <= _HEX


def _read_text(path: Path) -> str | None:
    data = _read_bytes(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
