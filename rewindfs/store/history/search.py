"""`rewind grep`: search the files of checkpoints without a mount.

Each distinct file version (path and blob) is read once, however many checkpoints
hold it, and reported under the newest checkpoint that holds it. Files that look
binary (a NUL byte in the first 8000 bytes, git's rule) are reported by name only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pygit2

from rewindfs.store.history import bounds, trees
from rewindfs.store.history.chain import Checkpoint
from rewindfs.store.objects.layout import is_remote_key

BINARY_PROBE = 8000
LINE_MAX = 1024 * 1024  # a longer line (in a big file) is searched in windows this big
OVERLAP = 64 * 1024  # each window overlapping the last by this much
LINK = int(pygit2.enums.FileMode.LINK)


@dataclass
class Match:
    checkpoint: Checkpoint
    path: bytes
    line_number: int  # 0 for a binary file
    line: bytes


def grep(repo: pygit2.Repository, checkpoints: list[Checkpoint], pattern: re.Pattern[bytes],
         paths: list[bytes] | None = None, names_only: bool = False, key: str | None = None
         ) -> Iterator[Match]:
    """Matches in the given checkpoints (newest first), each file version searched once.
    `key`: the project's; a fetched project's checkpoints are searched only within the
    bounds a tree from outside must keep (store.history.bounds), all checked first."""
    if key is not None and is_remote_key(key):
        for cp in checkpoints:
            bounds.check(repo, cp.tree_id, f"checkpoint {cp.short} of a fetched project",
                         "searched")
    seen: set[tuple[bytes, str]] = set()
    for cp in checkpoints:
        for prefix in paths or [b""]:
            for entry in trees.walk_entries(repo, cp.tree_id, prefix):
                key_ = (entry.path, entry.oid)
                if key_ in seen or entry.mode == LINK:
                    continue
                seen.add(key_)
                data = trees.blob_source(repo, entry.oid)
                if not isinstance(data, bytes):  # big: searched as it streams
                    yield from _streamed(cp, entry.path, data.chunks(), pattern, names_only)
                    continue
                if b"\0" in data[:BINARY_PROBE]:
                    if pattern.search(data):
                        yield Match(cp, entry.path, 0, b"")
                    continue
                for number, line in enumerate(data.splitlines(), start=1):
                    if pattern.search(line):
                        yield Match(cp, entry.path, number, line)
                        if names_only:
                            break


def _streamed(cp: Checkpoint, path: bytes, chunks: Iterator[bytes], pattern: re.Pattern[bytes],
              names_only: bool) -> Iterator[Match]:
    """Matches in a file read in pieces, as `grep` finds them in one read whole: lines
    numbered as splitlines() numbers them, a binary file (a NUL in its first 8000 bytes)
    reported once. A line (or a binary file) is searched in windows of LINE_MAX bytes,
    each overlapping the last by OVERLAP, so memory stays bounded whatever the file."""
    tail = b""
    number = 0
    binary: bool | None = None
    for chunk in chunks:
        if binary is None:
            binary = b"\0" in chunk[:BINARY_PROBE]
        data = tail + chunk
        if binary:
            if pattern.search(data):
                yield Match(cp, path, 0, b"")
                return
            tail = data[-OVERLAP:]
            continue
        lines = data.splitlines(keepends=True)
        tail = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        for line in lines:
            number += 1
            if pattern.search(line):
                yield Match(cp, path, number, line.rstrip(b"\r\n"))
                if names_only:
                    return
        if len(tail) > LINE_MAX:  # one long line: search what came, keep an overlap
            if pattern.search(tail):
                yield Match(cp, path, number + 1, tail[:LINE_MAX])
                if names_only:
                    return
                tail = _skip_line(chunks)
                number += 1
                continue
            tail = tail[-OVERLAP:]
    if tail and not binary and pattern.search(tail):
        yield Match(cp, path, number + 1, tail.rstrip(b"\r"))


def _skip_line(chunks: Iterator[bytes]) -> bytes:
    """The rest of a long line that matched already: read past, what follows it kept."""
    for chunk in chunks:
        end = chunk.find(b"\n")
        if end >= 0:
            return chunk[end + 1:]
    return b""
