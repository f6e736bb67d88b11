"""A project's history records (store.history.records.recordfile) read from the end of the file,
only as far back as what is asked for lies: a chain read from its tip finds the newest
records there, and each parent just before its child (the order writers append in, and
a rewrite writes in), so the first screen of a long history reads about a screen of the
file (store.history.records.listpage).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from rewindfs.store.history.records.recordfile import (
    CHAIN,
    HEADER,
    PACKS,
    Packs,
    Record,
    Summary,
    decode,
    key_for,
    opened,
)
from rewindfs.store.objects import private


class Tail:
    """The file read from its end, only as far back as what is asked for lies; a missing
    or foreign file holds nothing."""

    STEP = 1 << 16
    NEAR = 1 << 14  # bytes before the last record found where its parent is looked for

    def __init__(self, path: Path):
        self.path = path
        self.key = key_for(path)
        self.data = b"\n"  # "\n" + the file from `start` (a line's start) to `size`
        self.start = self.size = self.first = 0
        self.ok = False
        self._fd = -1
        self._cursor = -1  # file offset of the last record found
        self._summary_at = -1  # file offset of the newest summary
        try:
            fd = private.open_file(path, os.O_RDONLY)
        except OSError:
            return
        try:
            self.size = os.fstat(fd).st_size
            head = os.pread(fd, len(HEADER) + 1, 0)
            self.ok = head == HEADER + b"\n"
            self.start = self.first = len(head)
            if self.ok:
                self.start = self.size
                self._fd = os.dup(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        fd, self._fd = self._fd, -1  # forgotten first, as in private.open_dir
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()

    @property
    def whole(self) -> bool:
        return self.start <= self.first

    def _grow(self) -> bool:
        """Read further back; False when the whole file is read."""
        if not self.ok or self.whole or self._fd < 0:
            return False
        step = max(self.STEP, self.size - self.start)
        while True:
            at = max(self.first, self.start - step)
            chunk = os.pread(self._fd, self.start - at, at)
            if len(chunk) != self.start - at:
                self.first = self.start  # the file shrank (replaced: we hold the old one)
                return False
            if at > self.first:
                cut = chunk.find(b"\n")
                if cut < 0 or cut == len(chunk) - 1:
                    # No whole line in it (a record longer than the step: a remote's
                    # long paths): reach further back, or nothing would ever be read.
                    step *= 2
                    continue
                chunk, at = chunk[cut + 1:], at + cut + 1
            self.data = b"\n" + chunk + self.data[1:]
            self.start = at
            return True

    def _lines(self, key: bytes) -> Iterator[tuple[int, bytes]]:
        """(where in `data`, checked text) of lines starting with `key`, newest first."""
        end = len(self.data)
        while True:
            at = self.data.rfind(b"\n" + key, 0, end)
            if at < 0:
                shift = len(self.data)
                if not self._grow():
                    return
                end = len(self.data) - shift + end
                continue
            text = self._text_at(at)
            end = at
            if text is not None:
                yield at, text

    def _text_at(self, at: int) -> bytes | None:
        stop = self.data.find(b"\n", at + 1)
        return opened(self.data[at + 1: len(self.data) if stop < 0 else stop], self.key)

    def get(self, commit_id: str, newer: bool = False) -> Record | None:
        """An intact record of `commit_id`: first just before the last one found (a chain
        read from its tip finds each parent there: writers append in that order), then
        just after it (a reader's records), else the newest in the file. `newer`: a
        commit taken since the newest summary, looked for only after it (a checkpoint's
        new tip, never recorded yet, is not looked for through the whole file; a record
        of it written before the summary by a racing reader is only missed, and its
        commit read again)."""
        key = b"\n" + commit_id.encode() + b" "
        if newer and self._summary_at >= 0:
            lo, end = self._summary_at - self.start + 1, len(self.data)
            while (at := self.data.rfind(key, lo, end)) >= 0:
                record = self._found(at)
                if record is not None:
                    return record
                end = at
            return None
        if self._cursor >= 0:
            end = self._cursor - self.start + 1
            lo = max(0, end - self.NEAR)
            while (at := self.data.rfind(key, lo, end)) >= 0:
                record = self._found(at)
                if record is not None:
                    return record
                end = at
            # A reader's records (Recall.save of a chain read from its tip) put each
            # parent just after its child: looked for there next, not through the file.
            start, hi = self._cursor - self.start + 1, self._cursor - self.start + self.NEAR
            while (at := self.data.find(key, start, hi)) >= 0:
                record = self._found(at)
                if record is not None:
                    return record
                start = at + 1
        for at, text in self._lines(key[1:]):
            record = decode(text)
            if record is not None:
                self._cursor = self.start + at - 1
                return record
        return None

    def _found(self, at: int) -> Record | None:
        text = self._text_at(at)
        record = decode(text) if text is not None else None
        if record is not None:
            self._cursor = self.start + at - 1
        return record

    def summary(self) -> tuple[Summary | None, Packs]:
        """The newest chain summary in the file, and the packs every record written since
        it was read under (its own and those of `packs` lines after it)."""
        for at, text in self._lines(CHAIN):
            found = Summary.of(text)
            if found is not None:
                self._summary_at = self.start + at - 1
                return found, {**found.packs, **self._packs_after(at)}
        return None, {}

    def _packs_after(self, at: int) -> Packs:
        out: Packs = {}
        while (at := self.data.find(b"\n" + PACKS, at + 1)) >= 0:
            text = self._text_at(at)
            if text is not None:
                try:
                    out.update(json.loads(text[len(PACKS):]))
                except (TypeError, ValueError):
                    continue
        return out

    def packs(self) -> Packs:
        """The packs every packed record was read under (all `packs` lines)."""
        while self._grow():
            pass
        return self._packs_after(-1)
