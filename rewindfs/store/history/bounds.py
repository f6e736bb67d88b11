"""How much a stored tree holds, measured without walking what it repeats, and the bounds a
tree from outside (a project fetched from a remote) must keep to be read whole.

git's fetch checks every object it receives, but not what a tree adds up to: nine tree
objects, each naming the next one sixteen times, stand for 4.3 billion paths. So a tree
is measured bottom-up, each distinct subtree once (a tree is named by its content: met
twice, it is the same subtree), from the objects' headers and tree listings: its files,
directories, depth, biggest file and total size, exact however often a subtree repeats.
A tree bomb costs nine tree reads and one header read; a normal tree one read per
directory and one header read per file. The work itself is bounded: measuring gives up
(the tree is over) past `max_files` distinct files or directories, past `max_depth`
levels, or past `seconds`, so no tree, however made, holds a command for long.

The bounds are a local checkpoint's: `max_files`, `max_file_size_mb`,
`max_total_size_mb`, and the depth libgit2's walk of a working tree stops at
(capture.deepdirs.MAX_DEPTH): what a capture here could have stored. The CLI sets them
from the settings once per process (`configure`); the defaults are the settings'.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rewindfs.errors import Refused

if TYPE_CHECKING:  # pygit2 is only handed in (a command that never measures pays nothing)
    import pygit2

MiB = 1024 * 1024
# capture.deepdirs.MAX_DEPTH (libgit2's walk of a working tree stops there), not imported:
# every command configures the bounds, and few need the capture code.
MAX_DEPTH = 100
TREE, COMMIT = 0o040000, 0o160000
# What measuring counts to when captures have no `max_files` (its default, 0): a tree
# fetched from a remote past this is not read whole, however big the project it came from.
UNCAPPED_FILES = 2_000_000
MEMO_LIMIT = 200_000  # subtrees and blob sizes remembered per process (emptied when full)
CLOCK_EVERY = 1024  # objects read between two looks at the clock


@dataclass(frozen=True)
class Bounds:
    max_files: int = UNCAPPED_FILES  # files (and, separately, directories)
    max_file_size: int = 10 * MiB  # bytes; 0: no bound
    max_total: int = 500 * MiB  # bytes of every file together; 0: no bound
    max_depth: int = MAX_DEPTH  # path components
    seconds: float = 60.0  # measuring longer than this counts as over
    capped: bool = False  # max_files set (else max_files is UNCAPPED_FILES, no setting's)


DEFAULT = Bounds()
_current = [DEFAULT]


def configure(max_files: int, max_file_size: int, max_total: int) -> None:
    """The bounds of this process (the CLI's settings; `max_files` 0: UNCAPPED_FILES)."""
    _current[0] = Bounds(max_files=int(max_files) if max_files > 0 else UNCAPPED_FILES,
                         max_file_size=max(0, int(max_file_size)),
                         max_total=max(0, int(max_total)), capped=max_files > 0)


def _files_rule(b: Bounds) -> str:
    """Where the files bound comes from, for a refusal's words."""
    return f"max_files is {b.max_files:,}" if b.capped else \
        f"at most {b.max_files:,} with max_files 0"


def current() -> Bounds:
    return _current[0]


@dataclass(frozen=True, slots=True)
class Size:
    """What a tree holds (a file: anything but a directory or a gitlink)."""

    files: int
    dirs: int
    depth: int  # path components of its deepest entry (0: empty)
    biggest: int  # bytes of its biggest file
    total: int  # bytes of all its files


@dataclass(frozen=True)
class Measured:
    size: Size | None  # None when measuring gave up (`over` says why)
    over: str | None  # why the tree is over its bounds; None: within them

    @property
    def ok(self) -> bool:
        return self.over is None


_trees: dict[str, Size] = {}
_blobs: dict[str, int] = {}


class _GiveUp(Exception):
    pass


def measure(repo: pygit2.Repository, tree_id: str, bounds: Bounds | None = None) -> Measured:
    """Tree `tree_id` measured against `bounds` (default: this process's). Raises KeyError
    (or pygit2.GitError) for a missing or unreadable object, as reading it would."""
    b = bounds or current()
    try:
        size = _measure(repo, str(tree_id), b)
    except _GiveUp as why:
        return Measured(None, str(why))
    return Measured(size, over(size, b))


def over(size: Size, b: Bounds) -> str | None:
    """Why `size` is over bounds `b` (the first bound it passes), or None."""
    if size.files > b.max_files:
        return f"{size.files:,} files ({_files_rule(b)})"
    if size.dirs > b.max_files:
        return f"{size.dirs:,} directories (at most max_files, {b.max_files:,})"
    if size.depth > b.max_depth:
        return f"paths {size.depth:,} levels deep (at most {b.max_depth})"
    if b.max_file_size and size.biggest > b.max_file_size:
        return (f"a file of {_mib(size.biggest)} (max_file_size_mb is "
                f"{_mib(b.max_file_size, unit=False)})")
    if b.max_total and size.total > b.max_total:
        return (f"{_mib(size.total)} of files (max_total_size_mb is "
                f"{_mib(b.max_total, unit=False)})")
    return None


def check(repo: pygit2.Repository, tree_id: str, what: str, doing: str,
          bounds: Bounds | None = None) -> None:
    """Refused (one line, naming the bound) when tree `tree_id` is over its bounds: `what`
    names it ("checkpoint 3f2a1b9c of @origin/app"), `doing` what is refused ("restored")."""
    found = measure(repo, tree_id, bounds)
    if found.over is not None:
        raise Refused(f"{what} is not {doing}: it holds {found.over}; nothing was changed "
                      "(a bigger bound is a setting: `rewind config`)")


def _mib(n: int, unit: bool = True) -> str:
    value = n / MiB
    text = f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.1f}"
    return f"{text} MiB" if unit else text


def _measure(repo: pygit2.Repository, root: str, b: Bounds) -> Size:
    """Bottom-up, without recursion: a tree is finished once every subtree below it is."""
    known = _trees
    if root in known:
        return known[root]
    if len(known) > MEMO_LIMIT:
        known.clear()
    if len(_blobs) > MEMO_LIMIT:
        _blobs.clear()
    odb = repo.odb
    deadline = time.monotonic() + b.seconds
    reads = [0]
    listed: dict[str, list[tuple[int, str]]] = {}  # trees opened, not finished yet
    stack: list[tuple[str, int]] = [(root, 0)]  # (tree, its depth below the root)
    new_trees = 0
    while stack:
        oid, level = stack[-1]
        if oid in known:
            stack.pop()
            continue
        entries = listed.get(oid)
        if entries is None:
            if level >= b.max_depth:
                raise _GiveUp(f"paths more than {b.max_depth} levels deep (at most "
                              f"{b.max_depth})")
            new_trees += 1
            if new_trees > b.max_files + 1:
                raise _GiveUp(f"more than {b.max_files:,} directories (at most max_files)")
            _tick(reads, deadline, b)
            entries = listed[oid] = _entries(repo, oid)
            stack += [(child, level + 1) for mode, child in entries
                      if mode == TREE and child not in known]
            continue
        stack.pop()
        del listed[oid]
        files = dirs = depth = biggest = total = 0
        for mode, child in entries:
            if mode == TREE:
                sub = known[child]
                files, dirs, total = files + sub.files, dirs + 1 + sub.dirs, total + sub.total
                depth, biggest = max(depth, 1 + sub.depth), max(biggest, sub.biggest)
            elif mode != COMMIT:
                blob = _blobs.get(child)
                if blob is None:
                    if len(_blobs) > b.max_files + MEMO_LIMIT:
                        _blobs.clear()
                    _tick(reads, deadline, b)
                    blob = _blobs[child] = odb.read_header(child)[1]
                files, total = files + 1, total + blob
                depth, biggest = max(depth, 1), max(biggest, blob)
        known[oid] = Size(files, dirs, depth, biggest, total)
    return known[root]


def _tick(reads: list[int], deadline: float, b: Bounds) -> None:
    reads[0] += 1
    if reads[0] % CLOCK_EVERY == 0:
        if reads[0] > 4 * b.max_files + CLOCK_EVERY:
            raise _GiveUp(f"more than {b.max_files:,} files ({_files_rule(b)})")
        if time.monotonic() > deadline:
            raise _GiveUp(f"more than can be measured in {b.seconds:.0f} s")


def _entries(repo: pygit2.Repository, oid: str) -> list[tuple[int, str]]:
    tree = repo[oid]
    if tree.type_str != "tree":
        raise KeyError(oid)
    return [(entry.filemode, str(entry.id)) for entry in tree]
