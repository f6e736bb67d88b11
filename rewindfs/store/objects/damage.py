"""Naming the damaged file behind a failed store read.

libgit2 reports damage in its own words ("corrupted loose reference file: …",
"premature end of zlib stream", "object not found - no match for id (…)"), often
without saying which file is at fault. `explain` turns such an error into a
StoreDamaged naming the file (a ref, packed-refs, a loose object, a pack, an index,
the config, `shallow`), checking the object or file it suspects in Python rather
than asking libgit2 again. When the error names nothing, `explain` scans the store
(store.objects.verify.check) for the first damaged file.

Errors a user sees are one line (`rewind: store damaged: <file> (<what>); run
`rewind check``) with exit code 3.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pygit2

from rewindfs.errors import StoreDamaged, StoreError
from rewindfs.store.objects import odbguard
from rewindfs.store.objects.layout import Layout

_OID = re.compile(r"(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])")
_LOOSE_REF = re.compile(r"corrupted loose reference file: (\S+)")
_PEEL = re.compile(r"reference '([^']+)' cannot be peeled")
_CONFIG = re.compile(r"\(in (.+?):(\d+)")
_GRAFT = re.compile(r"invalid graft OID at line (\d+)")
# Errors of the kinds libgit2 raises for damaged or missing data, besides GitError.
LIBRARY_ERRORS = (pygit2.GitError, KeyError, ValueError)


def object_problem(objects_dir: Path, oid: str) -> StoreDamaged | None:
    """What is wrong with object `oid` (None: it reads back intact)."""
    from rewindfs.store.objects.verify import loose, packs  # (only once a read failed)

    known = odbguard.damaged(oid)
    if known is not None:
        return known
    path = loose.path_of(objects_dir, oid)
    try:
        loose.read_verified(path, oid)
        return None
    except FileNotFoundError:
        pass
    except StoreDamaged as exc:
        return exc
    except OSError as exc:
        return StoreDamaged(path, f"unreadable: {exc.strerror}")
    pack = packs.containing(objects_dir, oid)
    if pack is None:
        for idx in packs.indexes(objects_dir):
            problem = packs.index_problem(idx)
            if problem:  # it may be listed there: blame the index that cannot be searched
                return StoreDamaged(idx, f"pack index {problem}")
        return StoreDamaged(path, "missing object")
    odb = pygit2.Odb()
    odb.add_backend(pygit2.OdbBackendPack(str(objects_dir)), 1)
    try:
        odb.read(oid)
        return None
    except LIBRARY_ERRORS as exc:
        problem = packs.pack_problem(pack) or f"object {oid[:8]} unreadable: {_text(exc)}"
        return StoreDamaged(pack, problem)


def explain(layout: Layout, exc: BaseException, scan: bool = True) -> StoreDamaged | None:
    """The damaged file behind `exc` (a libgit2 error, or a StoreError wrapping one).

    With `scan`, an error that names nothing leads to a scan of the store for the
    first damaged file; without, only what the error itself points at is checked.
    """
    for err in _chain(exc):
        if isinstance(err, StoreDamaged):
            return err
    store = layout.store
    objects = store / "objects"
    for err in _chain(exc):
        text = _text(err)
        if m := _LOOSE_REF.search(text):
            return StoreDamaged(store / m.group(1), "corrupt ref file")
        if "corrupted packed references file" in text:
            return StoreDamaged(store / "packed-refs", "corrupt")
        if m := _GRAFT.search(text):
            return StoreDamaged(store / "shallow", f"not a commit id at line {m.group(1)}")
        if "failed to parse config file" in text or "failed to read config" in text:
            m = _CONFIG.search(text)
            where = Path(m.group(1)) if m else store / "config"
            line = f" at line {m.group(2)}" if m else ""
            return StoreDamaged(where, f"unparsable{line}")
        if m := _PEEL.search(text):
            found = ref_problem(layout, m.group(1))
            if found is not None:
                return found
        for oid in _OID.findall(text):
            found = object_problem(objects, oid)
            if found is not None:
                return found
        if "index" in text and ("invalid data" in text or "corrupt" in text):
            found = first_bad_index(layout)
            if found is not None:
                return found
    if not scan:
        return None
    from rewindfs.store.objects.verify import check  # (a scan: rare, and its imports are many)

    return check.first_problem(layout)


def ref_problem(layout: Layout, name: str) -> StoreDamaged | None:
    """What is wrong with ref `name`: its file, or the object it points at."""
    store = layout.store
    path = store / name
    target = None
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        text = _packed_ref(store, name)
        path = store / "packed-refs"
    except OSError as exc:
        return StoreDamaged(path, f"unreadable: {exc.strerror}")
    if text is None:
        return None
    if text.startswith("ref: "):
        return None  # symbolic: its target is checked on its own
    if len(text) == 40 and all(c in "0123456789abcdef" for c in text):
        target = text
    else:
        return StoreDamaged(path, "corrupt ref file")
    found = object_problem(store / "objects", target)
    if found is not None and found.problem == "missing object":
        return StoreDamaged(path, f"points at missing object {target[:8]}")
    return found


def first_bad_index(layout: Layout) -> StoreDamaged | None:
    """The first project index (stat cache) whose header or checksum is wrong."""
    from rewindfs.store.objects.verify import check

    for problem in check.index_problems(layout):
        return problem
    return None


def as_store_error(layout: Layout, exc: BaseException) -> StoreError | None:
    """The one-line store error to report for `exc`, or None when `exc` is not about the
    store (a bug: let it show). libgit2 errors always count; KeyError / ValueError only
    when the store is found damaged."""
    found = explain(layout, exc)
    if found is not None:
        return found
    if isinstance(exc, pygit2.GitError):
        return StoreError(f"store read failed: {_text(exc)}")
    return None


def from_libgit2(exc: BaseException) -> bool:
    """Whether a libgit2 error is behind `exc`."""
    return any(isinstance(err, pygit2.GitError) for err in _chain(exc))


def _packed_ref(store: Path, name: str) -> str | None:
    try:
        lines = (store / "packed-refs").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        oid, _, ref = line.partition(" ")
        if ref.strip() == name:
            return oid.strip()
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _text(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(text.split())
