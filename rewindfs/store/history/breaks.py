"""A project's history broken in the middle: where it breaks, and what is still there past it.

Each checkpoint names its parent. When that parent is missing or unreadable (and is
not a prune boundary, where history stops on purpose), the chain behind the project's
ref ends there: a break. The checkpoints before it are usually still in the store,
only no longer reachable through the chain, so `recover` looks for them from other
evidence: the project's history records (each commit and its parent, as last listed),
its labels, its notes, the ids its restore journal and step log recorded, the first
checkpoints its size cache knows, and then the object store
itself: every commit whose first-parent ancestry reaches one of those, and their
ancestors down to the root or the next break.

Numbers past a break: none. A checkpoint's number counts the numbered checkpoints
newer than it, and past a break nobody can say how many the missing part held, so a
number is given only up to the break (exactly the numbers a whole store gives there);
what is recovered behind it is listed without a number, reachable by id or label
(store.history.references refuses numbers and times it cannot place).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2

from rewindfs.errors import StoreDamaged
from rewindfs.store.history.checkpoint import pinned_order
from rewindfs.store.history.records import records
from rewindfs.store.objects.layout import LABELS_PREFIX, Layout, layout_of, objects_dir
from rewindfs.store.objects.verify import loose, packs

_OID = re.compile(r"^[0-9a-f]{40}$")
COMMIT = pygit2.enums.ObjectType.COMMIT
MAX_EVIDENCE_BYTES = 16 * 1024 * 1024  # a journal or log bigger than this is not read


@dataclass(frozen=True)
class Break:
    """The chain of a project stops at `child`, whose parent `missing` is damaged."""

    child: str
    missing: str
    damage: StoreDamaged

    def warning(self) -> str:
        """One line for the person: where, which file, and what it means for the list."""
        return (f"history broken at checkpoint {self.missing[:8]} (the parent of "
                f"{self.child[:8]}): {self.damage.path} ({self.damage.problem}); checkpoints "
                "past it are listed without a number; run `rewind check`")

    def refusal(self, reference: str) -> StoreDamaged:
        """The error for a number or time that falls past the break."""
        return StoreDamaged(self.damage.path, (
            f"{self.damage.problem}; checkpoint {reference!r} would lie past this break in "
            "the history, where checkpoints have no number: use an id or a label from "
            "`rewind list`"))


def recover(repo: pygit2.Repository, h16: str, chain: set[str],
            stop: frozenset[str]) -> list[pygit2.Commit]:
    """The project's readable checkpoints past a break (not in `chain`), newest first."""
    found: dict[str, pygit2.Commit] = {}
    for oid in evidence(repo, h16):
        commit = _commit(repo, oid)
        if commit is not None and oid not in chain:
            found[oid] = commit
    if not found:
        return []
    # Newer checkpoints of the same older part: commits whose first parent is one found.
    children = _first_parent_children(repo)
    queue = list(found)
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found and child not in chain:
                commit = _commit(repo, child)
                if commit is not None:
                    found[child] = commit
                    queue.append(child)
    # Older ones: down the first parents, to the root, a boundary or the next break.
    for commit in list(found.values()):
        while str(commit.id) not in stop and commit.parent_ids:
            parent = str(commit.parent_ids[0])
            if parent in found or parent in chain:
                break
            older = _commit(repo, parent)
            if older is None:
                break
            found[parent] = commit = older
    return sorted(found.values(), key=lambda c: pinned_order(c.commit_time, str(c.id)))


def evidence(repo: pygit2.Repository, h16: str) -> set[str]:
    """Commit ids the store records for the project outside its chain: its history
    records (commits and their parents), label targets, checkpoints with notes, ids in
    its restore journal and step log, the first checkpoints its size cache knows.
    Damaged evidence is skipped (it is `rewind check`'s to report), the rest still
    counts."""
    layout = layout_of(repo.path)
    ids: set[str] = set()
    for record in records.load(records.cache_path(layout.store, h16))[0].values():
        ids.add(record.id)
        if record.parent is not None:
            ids.add(record.parent)
    labels = LABELS_PREFIX + h16 + "/"
    try:
        names = [name for name in repo.references if name.startswith(labels)]
    except (pygit2.GitError, ValueError):
        names = []
    for name in [*names, Layout.notes_ref(h16)]:
        try:
            ref = repo.references.get(name)
            target = ref.resolve().target if ref is not None else None
        except (pygit2.GitError, KeyError, ValueError):
            continue
        if target is None:
            continue
        if name.startswith(labels):
            ids.add(str(target))
        else:
            ids.update(_note_keys(repo, target))
    admin = layout.worktree_admin(h16)
    for path in (admin / "restores.jsonl", layout.step_log(h16)):
        ids.update(_ids_in_jsonl(path))
    ids.update(_ids_in_json_keys(layout.sizes_cache(h16)))
    return ids


def _note_keys(repo: pygit2.Repository, notes_commit: object) -> Iterator[str]:
    """The checkpoint ids a notes commit has notes for (its flat or fanned-out names)."""
    try:
        tree = repo[notes_commit].peel(pygit2.Tree)
    except (pygit2.GitError, KeyError, ValueError):
        return
    stack = [(tree, "")]
    while stack:
        tree, prefix = stack.pop()
        for entry in tree:
            name = prefix + entry.name
            if entry.filemode == pygit2.enums.FileMode.TREE and len(name) < 40:
                try:
                    stack.append((repo[entry.id].peel(pygit2.Tree), name))
                except (pygit2.GitError, KeyError, ValueError):
                    continue
            elif _OID.match(name):
                yield name


def _ids_in_jsonl(path: Path) -> set[str]:
    try:
        if path.stat().st_size > MAX_EVIDENCE_BYTES:
            return set()
        lines = path.read_bytes().splitlines()
    except OSError:
        return set()
    out: set[str] = set()
    for line in lines:
        try:
            out.update(_ids_in(json.loads(line)))
        except ValueError:
            continue  # a torn or damaged line: the others still count
    return out


def _ids_in_json_keys(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return set()
    return {key for key in data if _OID.match(key)} if isinstance(data, dict) else set()


def _ids_in(value: object) -> Iterable[str]:
    if isinstance(value, str):
        return [value] if _OID.match(value) else []
    if isinstance(value, dict):
        return [oid for item in value.values() for oid in _ids_in(item)]
    if isinstance(value, list):
        return [oid for item in value for oid in _ids_in(item)]
    return []


def _commit(repo: pygit2.Repository, oid: str) -> pygit2.Commit | None:
    try:
        obj = repo.get(oid)
        return obj if isinstance(obj, pygit2.Commit) else None
    except (pygit2.GitError, KeyError, ValueError):
        return None


def _first_parent_children(repo: pygit2.Repository) -> dict[str, list[str]]:
    """Every commit in the store by its first parent: one pass over the object store
    (loose objects by their own headers, packed ones through libgit2's)."""
    objects = objects_dir(Path(repo.path))
    children: dict[str, list[str]] = {}
    for oid in _commit_ids(repo, objects):
        commit = _commit(repo, oid)
        if commit is not None and commit.parent_ids:
            children.setdefault(str(commit.parent_ids[0]), []).append(oid)
    return children


def _commit_ids(repo: pygit2.Repository, objects: Path) -> Iterator[str]:
    for oid in loose.all_ids(objects):
        try:
            if loose.read_header(loose.path_of(objects, oid))[0] == COMMIT:
                yield oid
        except (OSError, StoreDamaged):
            continue
    for idx in packs.indexes(objects):
        for oid in packs.listed_ids(idx):
            try:
                if repo.odb.read_header(oid)[0] == COMMIT:
                    yield oid
            except (pygit2.GitError, KeyError, ValueError):
                continue
