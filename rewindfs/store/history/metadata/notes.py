"""JSON documents attached to checkpoints, outside their file trees: a git notes ref per project.

`refs/notes/rewind/<h16>` is a commit whose tree maps checkpoint ids (40 hex
names, git's flat notes layout) to JSON blobs, so `git notes --ref=rewind/<h16>
show <id>` reads them too. Hermes reads only `refs/hermes/<h16>` and the commits
on it, and the mount and `diff -r` see only the checkpoint's own tree, so a
checkpoint with a note is an ordinary checkpoint to all of them.

Each write replaces the notes commit with a parentless one instead of stacking
history as `git notes add` does: an overwritten note becomes garbage git gc can
drop, and notes of checkpoints that have left the history are dropped on the way,
so the ref stays as small as the kept history. Writers hold the project lock; the
ref update is compare-and-swap all the same.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pygit2
from pygit2.enums import FileMode

from rewindfs.errors import StoreDamaged, StoreError
from rewindfs.store.history import refupdate
from rewindfs.store.history.signature import EMAIL, NAME, signature
from rewindfs.store.objects import damage
from rewindfs.store.objects.layout import Layout, layout_of

MAX_NOTE = 64 * 1024 * 1024  # bytes of one note read (modes of a 50,000-file restore: ~3 MiB)
MAX_NOTES = 1_000_000  # notes of one project read
_HEX = re.compile(r"^[0-9a-f]{2,40}$")
CAS_ATTEMPTS = 20


def read(repo: pygit2.Repository, h16: str, commit: str) -> dict[str, Any] | None:
    """The note on `commit`, or None (no note, or one that is not a JSON object)."""
    tree = _tree(repo, h16)
    if tree is None:
        return None
    for name in (commit, f"{commit[:2]}/{commit[2:]}", f"{commit[:2]}/{commit[2:4]}/{commit[4:]}"):
        try:
            entry = tree[name]
        except KeyError:
            continue
        return _decode(repo, entry.id)
    return None


def read_all(repo: pygit2.Repository, h16: str) -> dict[str, dict[str, Any]]:
    """Every note of the project, by checkpoint id."""
    tree = _tree(repo, h16)
    if tree is None:
        return {}
    out = {}
    for commit, blob in _flatten(repo, tree).items():
        doc = _decode(repo, blob)
        if doc is not None:
            out[commit] = doc
    return out


def write(repo: pygit2.Repository, h16: str, commit: str, doc: dict[str, Any],
          keep: set[str] | None = None) -> None:
    """Attach `doc` to `commit`, replacing its note; with `keep`, drop notes of other ids."""
    data = json.dumps(doc, sort_keys=True).encode()
    blob = repo.create_blob(data)

    def change(current: dict[str, pygit2.Oid]) -> dict[str, pygit2.Oid]:
        current[commit] = blob
        if keep is not None:
            current = {c: b for c, b in current.items() if c in keep or c == commit}
        return current

    _update(repo, h16, change)


def rekey(repo: pygit2.Repository, h16: str, renamed: dict[str, str]) -> None:
    """Move notes to the new ids of rewritten checkpoints (old id -> new id)."""
    if renamed and _tree(repo, h16) is not None:
        _update(repo, h16, lambda current: {renamed.get(c, c): b for c, b in current.items()})


def _update(repo: pygit2.Repository, h16: str,
            change: Callable[[dict[str, pygit2.Oid]], dict[str, pygit2.Oid]]) -> None:
    """Replace the notes commit with one whose notes are `change(current notes)`."""
    name = Layout.notes_ref(h16)
    for _ in range(CAS_ATTEMPTS):
        ref = repo.references.get(name)
        tree = _tree(repo, h16) if ref is not None else None
        current = _flatten(repo, tree) if tree is not None else {}
        note_commit = commit_of(repo, change(current))
        if refupdate.swap(repo, name, ref, note_commit, "rewindfs: note") is None:
            return
        time.sleep(0.005)  # another writer moved (or holds) it: merge with theirs
    raise StoreError(f"could not update {name}: it keeps changing under us")


def blobs(repo: pygit2.Repository, h16: str) -> dict[str, pygit2.Oid]:
    """Every note of the project as stored (checkpoint id -> blob), to copy them as they are."""
    tree = _tree(repo, h16)
    return _flatten(repo, tree) if tree is not None else {}


def commit_of(repo: pygit2.Repository, entries: dict[str, pygit2.Oid],
              when: int | None = None) -> pygit2.Oid:
    """A parentless notes commit (git's flat layout) holding `entries`: checkpoint id -> blob.
    Dated now, or at `when` in UTC (a fixed date: the same notes make the same commit on
    every machine)."""
    sig = signature() if when is None else pygit2.Signature(NAME, EMAIL, when, 0)
    return repo.create_commit(None, sig, sig, "rewindfs notes\n", tree_of(repo, entries), [])


def tree_of(repo: pygit2.Repository, entries: dict[str, pygit2.Oid]) -> pygit2.Oid:
    """The notes tree holding `entries` (checkpoint id -> blob)."""
    builder = repo.TreeBuilder()
    for entry_name, oid in sorted(entries.items()):
        builder.insert(entry_name, oid, FileMode.BLOB)
    return builder.write()


def _tree(repo: pygit2.Repository, h16: str) -> pygit2.Tree | None:
    """The notes tree of the project (None: no notes yet); a damaged ref, notes commit or
    tree is StoreDamaged naming the file."""
    name = Layout.notes_ref(h16)
    layout = layout_of(repo.path)
    try:
        ref = repo.references.get(name)
        if ref is None:
            return None
        found = repo[ref.resolve().target]
        if not isinstance(found, pygit2.Commit):
            ref_file = layout.store / name
            raise StoreDamaged(ref_file if ref_file.exists() else layout.store / "packed-refs",
                               f"points at a {found.type_str}, not a notes commit")
        return found.tree
    except (pygit2.GitError, KeyError, ValueError) as exc:
        found = damage.ref_problem(layout, name) or damage.explain(layout, exc, scan=False)
        raise (found or StoreError(f"{name} is unreadable: {exc}")) from exc


def _flatten(repo: pygit2.Repository, tree: pygit2.Tree) -> dict[str, pygit2.Oid]:
    """Commit id -> blob, also through the fan-out directories `git notes` makes for many
    notes. A notes tree may come from a remote (store.remote): only hex names count,
    a path longer than a commit id is not gone into, and at most MAX_NOTES are read,
    without recursion."""
    out: dict[str, pygit2.Oid] = {}
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack and len(out) < MAX_NOTES:
        prefix, folder = stack.pop()
        for entry in folder:
            name = prefix + entry.name
            if len(name) > 40 or not _HEX.match(entry.name):
                continue
            if entry.filemode == FileMode.TREE:
                if len(name) < 40:
                    stack.append((name, repo[entry.id]))
            elif len(name) == 40:
                out[name] = entry.id
    return out


def _decode(repo: pygit2.Repository, oid: pygit2.Oid) -> dict[str, Any] | None:
    """A note's JSON object; None when it is not one, is over MAX_NOTE bytes (read no
    further) or nested deeper than the parser goes."""
    try:
        if repo.odb.read_header(oid)[1] > MAX_NOTE:
            return None
        doc = json.loads(repo[oid].data)
    except (KeyError, ValueError, RecursionError, pygit2.GitError):
        return None
    return doc if isinstance(doc, dict) else None
