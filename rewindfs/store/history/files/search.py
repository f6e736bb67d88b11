"""`rewind grep`: search the files of checkpoints without a mount; and the checkpoints in
which a file of a given name changed (`rewind ui`'s search by name).

Each distinct file version (path and blob) is read once, however many checkpoints
hold it, and reported under the newest checkpoint that holds it. Files that look
binary (a NUL byte in the first 8000 bytes, git's rule) are reported by name only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pygit2

from rewindfs.store.history import bounds
from rewindfs.store.history.chain import Checkpoint
from rewindfs.store.history.files import trees
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
    whole = _whole_file_test(pattern)
    seen: set[tuple[bytes, str]] = set()
    for cp in checkpoints:
        for prefix in paths or [b""]:
            for entry in trees.walk_entries(repo, cp.tree_id, prefix):
                version = (entry.path, entry.oid)
                if version in seen or entry.mode == LINK:
                    continue
                seen.add(version)
                data = trees.blob_source(repo, entry.oid)
                if not isinstance(data, bytes):  # big: searched as it streams
                    yield from _streamed(cp, entry.path, data.chunks(), pattern, names_only)
                    continue
                if whole and not pattern.search(data):
                    continue  # no line of it can match: not split into lines
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


# What makes a match depend on where a line starts or ends: anchors, lookarounds.
_LINE_BOUND = re.compile(rb"\^|\$|\\[AZbB]|\(\?<?[=!]")


def _whole_file_test(pattern: re.Pattern[bytes]) -> bool:
    """Whether a file in which `pattern` finds nothing at all can be skipped without
    looking at its lines: so when a match never depends on where a line starts or ends
    (a file with a match in one of its lines has that match in the whole file too)."""
    source = pattern.pattern if isinstance(pattern.pattern, bytes) else b""
    return not _LINE_BOUND.search(source)


@dataclass
class NameMatch:
    checkpoint: Checkpoint
    path: bytes
    deleted: bool  # the checkpoint no longer holds it (it was deleted there)


def names(repo: pygit2.Repository, checkpoints: list[Checkpoint], needle: str
          ) -> Iterator[NameMatch]:
    """The checkpoints (newest first, as given) in which a file whose path contains `needle`
    (case folded) changed against the checkpoint before it. A checkpoint listed from its
    record (store.history.records.records) is read from the paths it names, as `rewind log` does;
    the others from their trees."""
    from rewindfs.store.history.files import pathlog

    wanted = needle.casefold()
    for cp in checkpoints:
        record = cp.record
        if record is not None and record.changes is not None:
            pairs = record.changes
            found = [(os.fsencode(pairs[i]), not pairs[i + 1])
                     for i in range(0, len(pairs), 2) if wanted in pairs[i].casefold()]
        else:
            parent = pathlog.parent_tree(repo, cp)
            if parent == pathlog.UNKNOWN:
                continue
            base = parent or str(repo.TreeBuilder().write())
            found = [(c.path, c.new is None) for c in trees.changes(repo, base, cp.tree_id)
                     if wanted in os.fsdecode(c.path).casefold()]
        for path, deleted in found:
            yield NameMatch(cp, path, deleted)
