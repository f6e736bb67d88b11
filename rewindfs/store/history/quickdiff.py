"""What changed since the newest checkpoint, counted in lines without libgit2: `rewind diff
--stat`'s quick path. The project's stat stamp (store.history.stamp) names the files whose
metadata moved; each is compared with the checkpoint's blob (store.history.quickread) and
its lines counted as libgit2 counts them.

libgit2's line diff (xdiff) is a shortest edit script (Myers) unless its heuristics step
in: a line repeated too often on the other side (xdiff's "multimatch", at about the square
root of the file's line count), or an edit cost of 256 or more. Only diffs where neither
can happen are counted here, so the counts are xdiff's; every other case (new files, whose
ignore rules only libgit2 knows, binary or oversized files, mode changes, symlinks, a
stamp that does not prove the rest unchanged) raises Unsure for the libgit2 path.
"""

from __future__ import annotations

import os
import stat as st
from pathlib import Path

from rewindfs.store.history import quickread, stamp
from rewindfs.store.history.checkpoint import Checkpoint
from rewindfs.store.history.diffstat import FileStat
from rewindfs.store.objects.rawodb import BLOB, TREE, RawOdb, Unsure

REGULAR, EXECUTABLE = 0o100644, 0o100755
MAX_COST = 200  # edit cost counted here; xdiff's heuristics start at 256
MAX_EQLIMIT = 1024  # xdiff's cap on its "multimatch" limit


def since_newest(odb: RawOdb, h16: str, workdir: Path, key: str, max_file_size: int
                 ) -> tuple[Checkpoint, list[FileStat]]:
    """The newest checkpoint and, per changed file, the lines added and removed since it
    (as `rewind diff --stat` with no references counts them)."""
    found = stamp.changes(odb.store, h16, workdir, key)
    if found is None:
        raise Unsure("no stamp proves what changed")
    commit, tree, paths = found
    base = quickread.resolve(odb, h16, "latest")
    if base.id != commit or base.tree_id != tree:
        raise Unsure("the stamp is not of the newest numbered checkpoint")
    files = []
    root = os.fsencode(workdir)
    for path in sorted(paths):
        changed = _file(odb, tree, root, path, max_file_size)
        if changed is not None:
            files.append(changed)
    return base, files


def _file(odb: RawOdb, tree: str, root: bytes, path: bytes, max_file_size: int
          ) -> FileStat | None:
    oid, mode = _lookup(odb, tree, path)
    if mode not in (REGULAR, EXECUTABLE):
        raise Unsure(f"{os.fsdecode(path)!r} is not a regular file in the checkpoint")
    old = odb.read_kind(oid, BLOB)
    try:
        info = os.lstat(os.path.join(root, path))
    except FileNotFoundError:
        return FileStat(path, path, 0, line_count(old), False, len(old), 0)
    if not st.S_ISREG(info.st_mode) or info.st_size > max_file_size:
        raise Unsure(f"{os.fsdecode(path)!r} is no longer a file the capture stores")
    if bool(info.st_mode & 0o100) != (mode == EXECUTABLE):
        raise Unsure(f"{os.fsdecode(path)!r} changed mode")
    with open(os.path.join(root, path), "rb") as fh:
        new = fh.read()
    if new == old:
        return None
    added, deleted = line_changes(old, new)
    return FileStat(path, path, added, deleted, False, len(old), len(new))


def _lookup(odb: RawOdb, tree: str, path: bytes) -> tuple[str, int]:
    oid, mode = tree, 0o040000
    for name in path.split(b"/"):
        if mode != 0o040000:
            raise Unsure("not in the checkpoint")
        oid, mode = quickread.tree_entry(odb.read_kind(oid, TREE), name)
    return oid, mode


def lines(data: bytes) -> list[bytes]:
    """Lines as git splits them: at each newline, which stays with its line."""
    if _binary(data) or data.startswith((b"\xff\xfe", b"\xfe\xff")):  # NUL, UTF-16
        raise Unsure("binary content")
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return out + [parts[-1]] if parts[-1] else out


def line_count(data: bytes) -> int:
    return len(lines(data))


def _binary(data: bytes) -> bool:
    """Anything libgit2 could take for binary (a NUL, or control characters that are not
    whitespace): those go to libgit2's path."""
    return any(c < 0x20 and c not in b"\t\n\r\b\f\x0b\x1b" or c == 0x7F
               for c in set(data))


def line_changes(old: bytes, new: bytes) -> tuple[int, int]:
    """(lines added, lines removed) from `old` to `new`, as xdiff counts them."""
    a, b = lines(old), lines(new)
    # xdiff counts a line's occurrences in the whole other file, against a limit from
    # the whole file's length, before it trims the common head and tail.
    mlim_a, mlim_b = _mlim(len(a)), _mlim(len(b))
    in_a, in_b = _counts(a), _counts(b)
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    a, b = a[start:end_a], b[start:end_b]
    if any(in_b.get(line, 0) >= mlim_a for line in a) or \
            any(in_a.get(line, 0) >= mlim_b for line in b):
        raise Unsure("lines repeated often enough for xdiff's heuristics")
    cost = _edit_cost(a, b)
    return (cost + len(b) - len(a)) // 2, (cost + len(a) - len(b)) // 2


def _mlim(records: int) -> int:
    """xdiff's xdl_bogosqrt(records), capped as it caps it."""
    value = 1
    while records > 0:
        value <<= 1
        records >>= 2
    return min(value, MAX_EQLIMIT)


def _counts(seq: list[bytes]) -> dict[bytes, int]:
    out: dict[bytes, int] = {}
    for line in seq:
        out[line] = out.get(line, 0) + 1
    return out


def _edit_cost(a: list[bytes], b: list[bytes]) -> int:
    """Lines added plus removed in a shortest edit script (Myers's greedy search)."""
    n, m = len(a), len(b)
    if not n or not m:
        return n + m
    far = {1: 0}
    for cost in range(min(n + m, MAX_COST) + 1):
        for k in range(-cost, cost + 1, 2):
            if k == -cost or (k != cost and far[k - 1] < far[k + 1]):
                x = far[k + 1]
            else:
                x = far[k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            far[k] = x
            if x >= n and y >= m:
                return cost
    raise Unsure("too many changed lines to count here")
