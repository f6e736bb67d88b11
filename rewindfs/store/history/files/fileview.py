"""One file as a person reads it (`rewind ui`'s diff pane): its change between two trees,
or its content in one, bounded: a file over `limit` bytes or a binary one is summarized
from its size alone (the object's header), never read whole; a patch or text longer than
`max_lines` is cut there and says so, and so is a line longer than MAX_LINE characters.

A change is git's patch of the two blobs alone (no diff of the rest of the trees), so
what it costs is what that one file costs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pygit2
from pygit2.enums import DeltaStatus, FileMode

from rewindfs.store.history.files import trees

LIMIT = 1024 * 1024  # bytes of one side of a change (or a file) read to show it
MAX_LINE = 2000  # characters of one line shown (a minified file's one line: cut there)
MAX_LINES = 5000  # lines of a patch or a file shown
BINARY_PROBE = 8000  # git's rule: a NUL byte in the first 8000 bytes makes a file binary

MAX_COUNTED = 1000  # files of a listing whose lines are counted (the rest: names only)

PATCH, TEXT, BINARY, LARGE, MISSING, LINK, DIRECTORY, SAME = (
    "patch", "text", "binary", "large", "missing", "link", "directory", "same")


@dataclass
class FileView:
    kind: str  # PATCH, TEXT (`text` holds it), or a summary: BINARY, LARGE, MISSING, ...
    text: str = ""  # the patch or the content, decoded (undecodable bytes replaced)
    old_size: int | None = None  # bytes of each side (None: absent)
    new_size: int | None = None
    cut: int = 0  # lines left out past max_lines
    added: int = 0  # a patch's lines
    deleted: int = 0

    @property
    def summary(self) -> str:
        """One line for a file that is not shown line by line."""
        sizes = " -> ".join(_size(n) for n in (self.old_size, self.new_size) if n is not None)
        return {BINARY: f"binary file ({sizes})", LARGE: f"large file ({sizes}): not shown",
                MISSING: "not in this checkpoint", LINK: "symbolic link",
                DIRECTORY: "a directory", SAME: "no change"}.get(self.kind, "")


@dataclass
class Changed:
    """A file that differs between two trees: `status` created, deleted or modified (from
    the old tree's side), its lines added and deleted (None: not counted, too large or
    past MAX_COUNTED), `binary` when git would call it so."""

    path: bytes
    status: str
    added: int | None = None
    deleted: int | None = None
    binary: bool = False


CREATED, DELETED, MODIFIED = "created", "deleted", "modified"


def listing(repo: pygit2.Repository, old_tree: str | None, new_tree: str,
            limit: int = LIMIT) -> list[Changed]:
    """Every file that differs from `old_tree` (None: an empty tree) to `new_tree`, in
    path order, with its lines counted when both sides are at most `limit` bytes (the
    first MAX_COUNTED files): a patch is made per file, only for those."""
    old = repo[old_tree] if old_tree else repo[repo.TreeBuilder().write()]
    diff = old.diff_to_tree(repo[new_tree])
    out = []
    for at, delta in enumerate(diff.deltas):
        status = CREATED if delta.status == DeltaStatus.ADDED else \
            DELETED if delta.status == DeltaStatus.DELETED else MODIFIED
        path = delta.new_file.raw_path if status != DELETED else delta.old_file.raw_path
        found = Changed(path, status)
        sides = [f for f in (delta.old_file, delta.new_file) if f.mode]
        sizes = [repo.odb.read_header(f.id)[1] for f in sides
                 if f.mode not in (int(FileMode.TREE), int(FileMode.COMMIT))]
        if at < MAX_COUNTED and all(n <= limit for n in sizes):
            patch = diff[at]
            if patch is not None:
                _, found.added, found.deleted = patch.line_stats
                found.binary = patch.delta.is_binary
        out.append(found)
    return out


def change(repo: pygit2.Repository, old_tree: str | None, new_tree: str | None, path: bytes,
           limit: int = LIMIT, max_lines: int = MAX_LINES) -> FileView:
    """How `path` changed from `old_tree` to `new_tree` (None: an empty tree)."""
    old = _blob_at(repo, old_tree, path)
    new = _blob_at(repo, new_tree, path)
    if old is None and new is None:
        return FileView(MISSING)
    if isinstance(old, str) or isinstance(new, str):
        return FileView(DIRECTORY if DIRECTORY in (old, new) else MISSING)
    if old is not None and new is not None and old.id == new.id:
        return FileView(SAME, old_size=_size_of(repo, old), new_size=_size_of(repo, new))
    sizes = [_size_of(repo, b) if b is not None else None for b in (old, new)]
    if any(s is not None and s > limit for s in sizes):
        return FileView(LARGE, old_size=sizes[0], new_size=sizes[1])
    datas = [trees.blob_bytes(repo, str(b.id)) if b is not None else b"" for b in (old, new)]
    if any(b"\0" in d[:BINARY_PROBE] for d in datas):
        return FileView(BINARY, old_size=sizes[0], new_size=sizes[1])
    name = os.fsdecode(path)
    patch = pygit2.Patch.create_from(datas[0] if old is not None else None,
                                     datas[1] if new is not None else None,
                                     old_as_path=name, new_as_path=name)
    _, added, deleted = patch.line_stats
    text, cut = _cut(patch.data.decode("utf-8", "replace"), max_lines)
    return FileView(PATCH, text, sizes[0], sizes[1], cut, added, deleted)


def content(repo: pygit2.Repository, tree: str, path: bytes, limit: int = LIMIT,
            max_lines: int = MAX_LINES) -> FileView:
    """`path` as `tree` holds it."""
    blob = _blob_at(repo, tree, path)
    if blob is None:
        return FileView(MISSING)
    if isinstance(blob, str):
        return FileView(DIRECTORY)
    size = _size_of(repo, blob)
    if size > limit:
        return FileView(LARGE, new_size=size)
    data = trees.blob_bytes(repo, str(blob.id))
    if b"\0" in data[:BINARY_PROBE]:
        return FileView(BINARY, new_size=size)
    text, cut = _cut(data.decode("utf-8", "replace"), max_lines)
    return FileView(TEXT, text, new_size=size, cut=cut)


def _blob_at(repo: pygit2.Repository, tree: str | None, path: bytes):
    """The blob (or symlink's blob) at `path`, DIRECTORY for a tree, None when absent."""
    if tree is None:
        return None
    item = trees.entry_at(repo, tree, path)
    if item is None or item.filemode == int(FileMode.COMMIT):
        return None
    if item.filemode == int(FileMode.TREE):
        return DIRECTORY
    return item


def _size_of(repo: pygit2.Repository, blob) -> int:
    return repo.odb.read_header(blob.id)[1]


def _cut(text: str, max_lines: int) -> tuple[str, int]:
    """The first `max_lines` lines of `text`, each cut past MAX_LINE characters (saying
    how many more it has), and how many lines were left out."""
    lines = text.splitlines(keepends=True)
    shown = [_short(line) for line in lines[:max_lines]]
    return "".join(shown), max(0, len(lines) - max_lines)


def _short(line: str) -> str:
    if len(line) <= MAX_LINE:
        return line
    body = line.rstrip("\r\n")
    return (f"{body[:MAX_LINE]} … ({len(body) - MAX_LINE} more characters on this line)"
            + line[len(body):])


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n:.1f} TiB"
