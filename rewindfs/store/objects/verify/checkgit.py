"""`rewind check` on the git side: HEAD, config, shallow, refs, packs, objects, reachability.

Refs loose and packed; every pack and loose object verified in Python; every object
of every checkpoint, label and note present and readable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pygit2

from rewindfs.errors import StoreDamaged
from rewindfs.store.objects import odbguard
from rewindfs.store.objects.layout import (
    LABELS_PREFIX,
    NOTES_PREFIX,
    REFS_PREFIX,
    Layout,
)
from rewindfs.store.objects.locks import write_atomic
from rewindfs.store.objects.verify import loose, packs
from rewindfs.store.objects.verify.problems import Problem, is_oid, read_text


def repository(layout: Layout) -> Iterator[Problem]:
    store = layout.store
    head = store / "HEAD"
    text = read_text(head)
    if text is None or not (text.startswith("ref: refs/") or is_oid(text.strip())):
        yield Problem(head, "missing or corrupt",
                      "rewrite it (`ref: refs/heads/main`; nothing reads it)",
                      lambda: write_atomic(head, "ref: refs/heads/main\n"))
    config = store / "config"
    try:
        pygit2.Config(str(config))
    except (pygit2.GitError, OSError, ValueError) as exc:
        yield Problem(config, f"unparsable: {' '.join(str(exc).split())}")
    shallow = store / "shallow"
    text = read_text(shallow)
    if text is not None:
        bad = [line for line in text.splitlines() if line.strip() and not is_oid(line.strip())]
        if bad:
            def drop_bad(path: Path = shallow) -> None:
                current = read_text(path) or ""
                kept = [ln for ln in current.splitlines() if is_oid(ln.strip())]
                write_atomic(path, "".join(f"{ln.strip()}\n" for ln in kept))

            yield Problem(shallow, f"{len(bad)} line(s) that are not commit ids",
                          "drop those lines", drop_bad)


def refs(layout: Layout, counts: dict[str, int]):
    """Yields problems; returns {ref name: target id} of the refs that parse."""
    store = layout.store
    refs: dict[str, str] = {}
    packed = store / "packed-refs"
    text = read_text(packed)
    if text is not None:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line or line.startswith("#"):
                continue
            if line.startswith("^") and is_oid(line[1:].strip()):
                continue
            oid, _, name = line.partition(" ")
            if is_oid(oid) and name.startswith("refs/"):
                refs[name] = oid
            else:
                yield Problem(packed, f"corrupt at line {number}")
                break
    root = store / "refs"
    for path in sorted(root.rglob("*")) if root.is_dir() else []:
        if not path.is_file() or path.name.endswith(".lock"):
            continue
        name = str(path.relative_to(store))
        content = read_text(path)
        value = (content or "").strip()
        if is_oid(value):
            refs[name] = value
        elif value.startswith("ref: "):
            continue
        else:
            yield Problem(path, "corrupt ref file (not a commit id)")
            refs.pop(name, None)
    counts["refs"] = len(refs)
    return refs


def pack_files(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
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


def loose_objects(layout: Layout, counts: dict[str, int]) -> Iterator[Problem]:
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


def reachability(layout: Layout, refs: dict[str, str], damaged: dict[str, Problem],
                  counts: dict[str, int]) -> Iterator[Problem]:
    """Every object of every checkpoint, label and note is present and readable."""
    store = layout.store
    objects = store / "objects"
    try:
        repo = pygit2.Repository(str(store), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError, ValueError):
        return  # HEAD/config damage, already reported
    odbguard.install(repo, objects)
    present = present_ids(objects)
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
        if tip in seen:  # met already (a label in a chain, or a blob of a tree): its kind
            yield from _not_a_commit(repo, tip, ref_path)  # still decides this ref
            continue
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


def _not_a_commit(repo: pygit2.Repository, oid: str, ref_path: Path) -> Iterator[Problem]:
    try:
        found = repo[oid]
    except (pygit2.GitError, KeyError, ValueError):
        return  # unreadable: reported where it was met first
    if not isinstance(found, pygit2.Commit):
        yield Problem(ref_path, f"points at a {found.type_str}, not a commit")


def present_ids(objects: Path) -> set[str]:
    present = set(loose.all_ids(objects))
    for idx in packs.indexes(objects):
        present.update(packs.listed_ids(idx))
    return present


def _boundaries(store: Path) -> set[str]:
    text = read_text(store / "shallow") or ""
    return {line.strip() for line in text.splitlines() if is_oid(line.strip())}
