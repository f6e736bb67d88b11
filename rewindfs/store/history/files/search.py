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

from rewindfs.store.history.chain import Checkpoint
from rewindfs.store.history.files import trees

BINARY_PROBE = 8000
LINK = int(pygit2.enums.FileMode.LINK)


@dataclass
class Match:
    checkpoint: Checkpoint
    path: bytes
    line_number: int  # 0 for a binary file
    line: bytes


def grep(repo: pygit2.Repository, checkpoints: list[Checkpoint], pattern: re.Pattern[bytes],
         paths: list[bytes] | None = None, names_only: bool = False) -> Iterator[Match]:
    """Matches in the given checkpoints (newest first), each file version searched once."""
    whole = _whole_file_test(pattern)
    seen: set[tuple[bytes, str]] = set()
    for cp in checkpoints:
        for prefix in paths or [b""]:
            for entry in trees.walk_entries(repo, cp.tree_id, prefix):
                key = (entry.path, entry.oid)
                if key in seen or entry.mode == LINK:
                    continue
                seen.add(key)
                data = trees.blob_bytes(repo, entry.oid)
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
    record (store.history.records) is read from the paths it names, as `rewind log` does;
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
