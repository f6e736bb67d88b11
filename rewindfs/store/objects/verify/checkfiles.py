"""`rewind check` on rewindfs's own files: admin dirs, indexes, records, logs, leftovers.

Project admin dirs and their indexes (stat caches), project records, JSON-lines logs,
lock and temp files of killed writers, and a commit-graph naming pruned commits.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path

from rewindfs.store.objects.layout import (
    Layout,
    project_hash,
)
from rewindfs.store.objects.locks import file_lock
from rewindfs.store.objects.repo import rewrite_admin_files
from rewindfs.store.objects.verify.checkgit import present_ids
from rewindfs.store.objects.verify.problems import STALE_SECONDS, Problem, read_bytes, read_text


def admin_dirs(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    """worktrees/<h16>/: the files that make it a git worktree, and its index."""
    root = layout.store / "worktrees"
    dirs = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    counts["projects"] = len(dirs)
    for admin in dirs:
        h16 = admin.name
        broken = []
        if not (read_text(admin / "HEAD") or "").startswith("ref: "):
            broken.append("HEAD")
        if (read_text(admin / "commondir") or "").strip() != "../..":
            broken.append("commondir")
        gitdir = read_bytes(admin / "gitdir")
        if not gitdir or not gitdir.rstrip(b"\n").endswith(b"/.git"):
            broken.append("gitdir")
        if broken:
            workdir = _record_workdir(layout, h16)
            fix = repair_text = None
            if workdir is not None and project_hash(workdir) == h16:
                repair_text = "rewrite them from the project record"

                def fix(admin: Path = admin, workdir: Path = workdir, h16: str = h16) -> None:
                    rewrite_admin_files(admin, h16, workdir)
            yield Problem(admin, f"project admin dir: {', '.join(broken)} damaged", repair_text,
                          fix)
        index = admin / "index"
        problem = _index_problem(index)
        if problem:
            yield Problem(index, f"stat cache {problem}",
                          "remove it (the next checkpoint rebuilds it)",
                          lambda index=index, h16=h16: _remove_index(layout, h16, index))


def records(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
    folder = layout.store / "projects"
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    counts["project records"] = len(files)
    for path in files:
        raw = read_bytes(path)
        try:
            data = json.loads((raw or b"").decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            yield Problem(path, "project record is not valid UTF-8 JSON")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("workdir"), str):
            yield Problem(path, "project record has no workdir")


def logs(layout: Layout) -> Iterator[Problem]:
    """JSON-lines files: restore journals, agent step logs, pending actions, write ledgers.

    Their readers skip a line they cannot parse (a writer killed mid-line leaves one),
    so such lines are reported, not counted as damage."""
    store = layout.store
    files = [*store.glob("worktrees/*/restores.jsonl"), *store.glob("steps/*.jsonl"),
             *store.glob("actions/*.jsonl"), *store.glob("ledger/*.jsonl")]
    for path in sorted(files):
        raw = read_bytes(path)
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


def leftovers(layout: Layout) -> Iterator[Problem]:
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


def commit_graph(layout: Layout) -> Iterator[Problem]:
    """A commit-graph (written by `git gc`, e.g. Hermes's) that names commits pruned since
    makes `git fsck` fail; it is only a cache, so removing it loses nothing."""
    info = layout.store / "objects" / "info"
    files = [info / "commit-graph", *sorted((info / "commit-graphs").glob("*.graph"))]
    files = [f for f in files if f.is_file()]
    if not files:
        return
    present = present_ids(layout.store / "objects")
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


def _graph_commits(path: Path) -> list[str] | None:
    """Commit ids listed in a commit-graph file (its OIDL chunk), None if unparsable."""
    data = read_bytes(path)
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


def _index_problem(index: Path) -> str | None:
    data = read_bytes(index)
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
    raw = read_bytes(layout.project_record(h16))
    try:
        data = json.loads((raw or b"").decode("utf-8"))
        return Path(data["workdir"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
