"""What the store keeps alive, per project and in all, for `rewind status`, remembered.

Status shows each project's checkpoint count and the bytes only it holds, and what an
explicit gc would free now. Read from git, these cost a walk of every checkpoint of
every project: they grew with the history. Here a project's kept objects come from
its history records (store.history.records.records): its checkpoints' commits, the trees and
blobs each added over its parent (recorded), everything under the oldest kept one and
under labelled checkpoints pruned out of the chain (a tree walk, remembered per tree
in caches/closures.json). Other refs (notes, anything else) are asked of git, once per
value of the ref; the indexes (per-project stat caches, which gc keeps) are read once
per version of the file. Sizes come from objsizes.

caches/status.json remembers the answer under everything it depends on: every ref's
value, `shallow`, the packs and the index files. When none changed, status reads that
and nothing else; otherwise the objects are gathered again from the records, which
costs the kept objects of the store in memory, not a walk of git.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from rewindfs.store.history.chain import recorded_chain
from rewindfs.store.history.records import records
from rewindfs.store.history.shallow import boundaries
from rewindfs.store.maintenance.objsizes import SizeTable, object_bytes
from rewindfs.store.objects import gitcli, private
from rewindfs.store.objects.indexfile import not_in_tip
from rewindfs.store.objects.layout import CACHES, LABELS_PREFIX, REFS_PREFIX, Layout, pack_files

VERSION = 1
SUMMARY = "status.json"
CLOSURES = "closures.json"
TREE = pygit2.enums.ObjectType.TREE
BLOB = pygit2.enums.ObjectType.BLOB


@dataclass
class Live:
    counts: dict[str, int] = field(default_factory=dict)  # h16 -> kept checkpoints
    exclusive: dict[str, int] = field(default_factory=dict)  # h16 -> bytes only it holds
    live_bytes: int = 0  # on disk, of every object a ref or an index keeps
    stored_bytes: int = 0

    @property
    def reclaimable(self) -> int:
        return max(0, self.stored_bytes - self.live_bytes)


def measure(layout: Layout, repo: pygit2.Repository) -> Live:
    """Counts, exclusive sizes and live bytes of the store now (StoreError when git fails)."""
    state = _state(layout, repo)
    summary = _read_json(layout.store / CACHES / SUMMARY)
    if summary.get("version") == VERSION and summary.get("state") == state:
        live = Live(summary["counts"], summary["exclusive"], summary["live_bytes"])
    else:
        live = _gather(layout, repo, state)
        _write_json(layout.store / CACHES / SUMMARY, {
            "version": VERSION, "state": state, "counts": live.counts,
            "exclusive": live.exclusive, "live_bytes": live.live_bytes})
    live.stored_bytes = object_bytes(layout)[0]
    return live


def _state(layout: Layout, repo: pygit2.Repository) -> dict:
    refs = {}
    for ref in repo.listall_reference_objects():
        refs[ref.name] = str(ref.target)
    return {"refs": refs, "shallow": sorted(boundaries(repo)),
            "packs": pack_files(layout.store / "objects"), "indexes": _index_files(layout)}


def _index_files(layout: Layout) -> dict[str, list[int]]:
    """{path: [size, mtime_ns]} of every index git's gc keeps objects of: the store's own,
    if any, and each worktree's (rewindfs's per-project stat caches; Hermes's indexes/
    are not among them)."""
    out = {}
    try:
        admins = [e.path for e in os.scandir(layout.store / "worktrees")
                  if e.is_dir(follow_symlinks=False)]
    except OSError:
        admins = []
    for index in [f"{layout.store}/index", *(f"{a}/index" for a in admins)]:
        try:
            st = os.stat(index)
        except OSError:
            continue
        out[index] = [st.st_size, st.st_mtime_ns]
    return out


class _Gathering:
    def __init__(self, layout: Layout, repo: pygit2.Repository, state: dict):
        self.layout, self.repo, self.state = layout, repo, state
        self.stop = frozenset(state["shallow"])
        self.objects: set[str] = set()  # every object kept, hex
        self.owner: dict[str, str] = {}  # blob -> the one project keeping it, or ""
        old = _read_json(layout.store / CACHES / CLOSURES)
        self.known_closures = old if isinstance(old, dict) else {}
        self.closures: dict[str, list[list[str]]] = {}

    def project(self, h16: str, labels: list[str]) -> int | None:
        """Gather the project's kept objects; its count (None: the records cannot say)."""
        recall = records.Recall(self.repo, self.layout.store, h16)
        chain = recorded_chain(self.repo, h16, self.stop, recall)
        if chain is None:
            self.objects.update(_git_objects(self.layout, [records_ref(h16)]))
            return None
        in_chain = {r.id for r in chain}
        pinned = [r for oid in labels if oid not in in_chain and (r := recall.get(oid))]
        recall.save(chain + pinned)
        blobs: set[str] = set()
        self.objects.update(in_chain, (r.id for r in pinned))
        for at, record in enumerate(chain):
            if at < len(chain) - 1 and record.changes is not None and record.trees:
                blobs.update(b for b in record.changes[1::2] if b)
                self.objects.update(record.trees)
            else:
                blobs.update(self.closure(record.tree))
        for record in pinned:
            blobs.update(self.closure(record.tree))
        self.objects.update(blobs)
        owner = self.owner
        for blob in blobs:
            owner[blob] = h16 if owner.get(blob, h16) == h16 else ""
        return len(chain) + len(pinned)

    def closure(self, tree: str) -> list[str]:
        """Adds every tree under `tree` (itself included) to the kept objects; its blobs."""
        found = self.closures.get(tree) or self.known_closures.get(tree)
        if not (isinstance(found, list) and len(found) == 2):
            found = _walk(self.repo, tree)
        self.closures[tree] = found
        self.objects.update(found[0])
        return found[1]


BATCH = "batch:"  # refs-objects.json: refs asked of git together


def records_ref(h16: str) -> str:
    return REFS_PREFIX + h16


def _gather(layout: Layout, repo: pygit2.Repository, state: dict) -> Live:
    work = _Gathering(layout, repo, state)
    refs: dict[str, str] = state["refs"]
    labels: dict[str, list[str]] = {}  # h16 -> its label refs
    others = []
    for name in refs:
        if name.startswith(LABELS_PREFIX):
            labels.setdefault(name[len(LABELS_PREFIX):].partition("/")[0], []).append(name)
        elif not name.startswith(REFS_PREFIX):
            others.append(name)
    live = Live()
    for name in refs:
        if name.startswith(REFS_PREFIX):
            h16 = name[len(REFS_PREFIX):]
            count = work.project(h16, [refs[label] for label in labels.pop(h16, [])])
            if count is not None:
                live.counts[h16] = count
    for names in labels.values():  # labels of projects without a ref
        others += names
    work.objects.update(_others(layout, others, refs))
    work.objects.update(_index_objects(layout, repo, state["indexes"], refs))
    _write_json(layout.store / CACHES / CLOSURES, work.closures)
    table = SizeTable(layout)
    keep = {bytes.fromhex(o) for o in work.objects if len(o) == 40}
    table.of(keep)
    live.live_bytes = sum(table.size(o) for o in keep)
    live.exclusive = dict.fromkeys(live.counts, 0)
    for blob, h16 in work.owner.items():
        if h16 in live.exclusive:
            live.exclusive[h16] += table.size(bytes.fromhex(blob))
    table.save(keep)
    return live


def _walk(repo: pygit2.Repository, tree: str) -> list[list[str]]:
    """[trees, blobs] under `tree` (gitlinks left out: no object of ours)."""
    trees, blobs, stack = [tree], [], [tree]
    seen = {tree}
    while stack:
        try:
            entries = repo[stack.pop()]
        except (KeyError, ValueError):
            continue  # a missing tree (damage) keeps nothing under it
        for entry in entries:
            oid = str(entry.id)
            if entry.type == BLOB:
                blobs.append(oid)
            elif entry.type == TREE and oid not in seen:
                seen.add(oid)
                trees.append(oid)
                stack.append(oid)
    return [trees, blobs]


def _others(layout: Layout, names: list[str], refs: dict[str, str]) -> set[str]:
    """Objects of refs other than projects' (notes, what was fetched, ...), asked of git
    once per value. The refs not known yet are asked of git in one run (a remote can
    hold 20,000 labels: one git each took a minute); when several are, the answer is
    remembered for them together, and asked again together once one of them moves."""
    path = layout.store / CACHES / "refs-objects.json"
    known = _read_json(path)
    fresh: dict[str, list] = {}
    for name, entry in known.items():
        if name.startswith(BATCH):
            held = entry[0] if isinstance(entry, list) and isinstance(entry[0], dict) else {}
            if held and all(refs.get(ref) == value for ref, value in held.items()):
                fresh[name] = entry
        elif name in refs and isinstance(entry, list) and entry[0] == refs[name]:
            fresh[name] = entry
    batched = {ref for key, entry in fresh.items() if key.startswith(BATCH) for ref in entry[0]}
    missing = [name for name in names if name not in fresh and name not in batched]
    if len(missing) == 1:
        fresh[missing[0]] = [refs[missing[0]], sorted(_git_objects(layout, missing))]
    elif missing:
        held = {name: refs[name] for name in missing}
        fresh[BATCH + missing[0]] = [held, sorted(_git_objects(layout, missing))]
    if fresh != known:
        _write_json(path, fresh)
    return {oid for entry in fresh.values() for oid in entry[1]}


def _git_objects(layout: Layout, names: list[str]) -> set[str]:
    """StoreError when git cannot say (not installed, a ref it cannot follow): status then
    shows sizes as unknown, and nothing half known is remembered."""
    out = gitcli.run(layout, ["rev-list", "--objects", "--no-object-names", "--stdin"],
                     stdin="".join(f"{n}\n" for n in names).encode())
    return set(out.decode().split())


def _index_objects(layout: Layout, repo: pygit2.Repository, files: dict[str, list[int]],
                   refs: dict[str, str]) -> set[str]:
    """Objects an index names (entries' blobs, cache-tree trees) that its project's newest
    checkpoint does not hold at the same path (staged, never committed, or written by a
    capture whose checkpoint has gone): read once per version of the index and the tip."""
    path = layout.store / CACHES / "index-objects.json"
    known = _read_json(path)
    fresh = {}
    for name, stat in files.items():
        tip = refs.get(REFS_PREFIX + os.path.basename(os.path.dirname(name)))
        entry = known.get(name)
        if not (isinstance(entry, list) and entry[:2] == [stat, tip]):
            try:
                held = not_in_tip(repo, Path(name).read_bytes(), tip)
                entry = [stat, tip, sorted({*held[0], *held[1]})]
            except (OSError, ValueError, IndexError, struct.error):
                continue  # unreadable: gc would fail on it too; nothing to add
        fresh[name] = entry
    if fresh != known:
        _write_json(path, fresh)
    return {oid for entry in fresh.values() for oid in entry[2]}


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict) -> None:
    try:
        private.ensure_dir(path.parent)
        private.write_atomic(path, json.dumps(data, separators=(",", ":")), durable=False)
    except OSError:
        pass  # a cache
