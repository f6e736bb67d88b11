"""The history records file (`caches/<h16>.history`, store.history.records.records), written
and read by the one reader of the store (store.history.chain).

One line per record: the commit id, its recorded first parent (`-` x 40: none), whether it
is a pre-rollback snapshot (`1`/`0`) and its author time, at fixed offsets, then the rest
of the record as JSON, then a tab and a MAC of all that (BLAKE2b keyed by the store's own
`caches/records.key`, made when the first records are written, private to the store's
owner). The fixed part lets a reader
follow a chain from its tip by looking each parent up from the end of the file, where
the newest records are (a writer appends; a rewrite puts the oldest first), parsing the
JSON of the rows it shows and no other: the first screen of `rewind list` reads what it
shows, not the history. `packs ` lines name the packs the records after them were read
under; `chain ` lines are chain summaries (`Summary`): what walking a chain from a tip
found, so a reader that reaches that tip knows the rest without walking it.

A file of another version, or not ours, reads as empty (its commits are read again and
the file is rebuilt); a line whose MAC does not match is skipped (read again), so a torn
append, a damaged line or a line edited by anyone but rewindfs (a checksum anyone can
compute would let an edit stand) costs a re-read, never a wrong answer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from rewindfs.store.history.checkpoint import is_pre_rollback
from rewindfs.store.objects import private
from rewindfs.store.objects.durable import write_all
from rewindfs.store.objects.layout import CACHES

try:  # the module hashlib would load OpenSSL for (milliseconds every start-up)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

VERSION = 5
HEADER = f"rewindfs history records v{VERSION}".encode()
NO_PARENT = b"-" * 40
PACKS, CHAIN = b"packs ", b"chain "
JSON_AT = 100  # id 0-40, parent 41-81, pre-rollback 82, author time 84-99 (%+015d)
Packs = dict[str, list[int]]
_decode = json.JSONDecoder().decode


@dataclass(frozen=True, slots=True)
class Record:
    """One commit, as remembered (store.history.records.records)."""

    id: str
    tree: str
    parent: str | None  # the recorded first parent, whether or not it is still stored
    time: int  # the author's, as listed
    offset: int
    commit_time: int  # the committer's (orders labelled checkpoints pruned out of the chain)
    reason: str
    trailers: dict[str, str]
    # [files changed, insertions, deletions] against the parent (a root: its files), for
    # commits that do not record them (Hermes's); None when they do, or when the parent
    # could not be read
    stats: list[int] | None
    # What changed against the parent, flat: path (os.fsdecode'd), new blob id ("" when
    # deleted), path, id, ...; None: a root, or too big to index (compare the trees).
    changes: list[str] | None
    # The trees it holds that its parent does not (its root tree and those of every
    # directory with a change in it); None with `changes` None. With the blobs of
    # `changes`, what this checkpoint adds to the objects its parent keeps.
    trees: list[str] | None
    where: list[int]  # [size, mtime_ns] of its loose object file when read; []: packed

    def fields(self) -> list:
        return [self.id, self.tree, self.parent, self.time, self.offset, self.commit_time,
                self.reason, self.trailers, self.stats, self.changes, self.trees, self.where]

    def changed_paths(self) -> list[str]:
        return [] if self.changes is None else self.changes[0::2]

    @property
    def pre_rollback(self) -> bool:
        return is_pre_rollback(self.reason, self.trailers)


@dataclass
class Summary:
    """What walking a project's chain from `tip` found, with `shallow` (the prune boundary
    file's [inode, size, mtime_ns]; zeros: none) as it was: how many checkpoints, how many
    of them are not pre-rollback snapshots, the oldest author time, the last one; and of
    the commits `labels` named then (None: not asked), which are in the chain (id ->
    whether a pre-rollback snapshot). Facts about that tip and that boundary, so they
    hold for any later reader that finds both unchanged."""

    tip: str
    shallow: list[int]
    count: int
    numbered: int
    oldest: int
    bottom: str
    root: bool  # the last one is the project's first checkpoint (no parent recorded)
    labels: list[str] | None
    in_chain: dict[str, bool]
    packs: Packs  # every pack the file's records were read under, when it was written

    def line(self) -> bytes:
        return CHAIN + json.dumps(self.__dict__, separators=(",", ":")).encode()

    @classmethod
    def of(cls, text: bytes) -> Summary | None:
        try:
            found = cls(**json.loads(text[len(CHAIN):]))
        except (TypeError, ValueError):
            return None
        return found if len(found.tip) == 40 and found.count > 0 else None


def loose_unchanged(objects: str | Path, record: Record) -> bool:
    """Whether the loose object file `record` was read from (`where`) is still the one it
    was: same size and mtime (a rewritten or replaced file is read again)."""
    commit_id = record.id
    try:
        st = os.stat(f"{objects}/{commit_id[:2]}/{commit_id[2:]}")
    except OSError:
        return False
    return [st.st_size, st.st_mtime_ns] == record.where


def cache_path(store: Path, h16: str) -> Path:
    """The project's records, in the store at `store`."""
    return store / CACHES / f"{h16}.history"


def shallow_key(store: Path) -> list[int]:
    """What identifies the store's `shallow` file as it is now (it is only ever replaced
    by a rename, never written in place: store.history.shallow)."""
    try:
        st = os.stat(store / "shallow")
    except OSError:
        return [0, 0, 0]
    return [st.st_ino, st.st_size, st.st_mtime_ns]


# -- lines ---------------------------------------------------------------------------

KEY_FILE = "records.key"
_keys: dict[str, bytes | None] = {}


def key_for(path: Path) -> bytes | None:
    """The MAC key of the records file `path` (its folder's KEY_FILE, made on first use);
    None when it cannot be read or made: no record is then trusted or written."""
    folder = str(path.parent)
    if folder in _keys:
        return _keys[folder]
    key = None
    for _attempt in range(2):
        try:
            fd = private.open_file(path.parent / KEY_FILE, os.O_RDONLY)
            try:
                key = os.read(fd, 64)
            finally:
                os.close(fd)
            break
        except FileNotFoundError:
            try:
                private.ensure_dir(path.parent)
                fd = private.open_file(path.parent / KEY_FILE,
                                       os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                continue  # made meanwhile by another process: read it
            except OSError:
                break
            try:
                write_all(fd, os.urandom(32))
            finally:
                os.close(fd)
        except OSError:
            break
    key = key if key is not None and len(key) == 32 else None
    _keys[folder] = key
    return key


def _mac(text: bytes, key: bytes) -> bytes:
    return blake2b(text, key=key, digest_size=8).hexdigest().encode()


def seal(text: bytes, key: bytes) -> bytes:
    return text + b"\t" + _mac(text, key) + b"\n"


def opened(line: bytes, key: bytes | None) -> bytes | None:
    """A line's text when its MAC matches (without the newline), else None."""
    text, tab, mac = line.rstrip(b"\n").rpartition(b"\t")
    return text if tab and key is not None and mac == _mac(text, key) else None


def encode(record: Record) -> bytes:
    rest = [record.tree, record.offset, record.commit_time, record.reason, record.trailers,
            record.stats, record.changes, record.trees, record.where]
    parent = record.parent.encode() if record.parent else NO_PARENT
    return b"%s %s %s %+015d %s" % (record.id.encode(), parent,
                                     b"1" if record.pre_rollback else b"0", record.time,
                                     json.dumps(rest, separators=(",", ":")).encode())


def _made(text: bytes, rest: list) -> Record:
    parent = text[41:81]
    return Record(text[:40].decode("ascii"), rest[0],
                  None if parent == NO_PARENT else parent.decode("ascii"),
                  int(text[84:99]), *rest[1:])


def decode(text: bytes) -> Record | None:
    """The record a checked line's text holds; None when it holds none."""
    if not is_record(text):
        return None
    try:  # (str to the decoder: json.loads would detect the bytes' encoding each time)
        return _made(text, _decode(text[JSON_AT:].decode("utf-8")))
    except (TypeError, ValueError, IndexError, UnicodeError):
        return None


def is_record(text: bytes) -> bool:
    return len(text) > JSON_AT and text[40:41] == b" " and text[99:100] == b" "


def parent_of(text: bytes) -> str | None:
    parent = text[41:81]
    return None if parent == NO_PARENT else parent.decode("ascii")


def pre_of(text: bytes) -> bool:
    return text[82:83] == b"1"


def time_of(text: bytes) -> int:
    return int(text[84:99])


# -- the whole file ------------------------------------------------------------------

@dataclass
class Parsed:
    records: dict[str, Record]
    packs: Packs
    lines: int
    foreign: bool  # something there, but not of this version: rebuild it
    summary: Summary | None = None  # the newest chain summary


def parse(raw: bytes, key: bytes | None) -> Parsed:
    lines = raw.split(b"\n")
    if lines[0] != HEADER:
        return Parsed({}, {}, 0, raw != b"")
    texts, packs, summary = [], {}, None
    for line in lines[1:]:
        text = opened(line, key)
        if text is None:
            continue
        if is_record(text):
            texts.append(text)
        elif text.startswith(CHAIN):
            summary = Summary.of(text) or summary
        elif text.startswith(PACKS):
            try:
                packs.update(json.loads(text[len(PACKS):]))
            except (TypeError, ValueError):
                continue
    try:
        rests = json.loads(b"[" + b",".join(t[JSON_AT:] for t in texts) + b"]")
    except ValueError:
        rests = None
    records: dict[str, Record] = {}
    for at, text in enumerate(texts):
        try:
            record = _made(text, rests[at]) if rests is not None else decode(text)
        except (TypeError, ValueError, IndexError, UnicodeError):
            record = None
        if record is not None:
            records[record.id] = record
    return Parsed(records, packs, len(lines) - 1, False, summary)


# -- writing -------------------------------------------------------------------------

def append(path: Path, lines: list[bytes]) -> None:
    """Add lines (texts: each sealed here) to the file, created (with its header) when
    missing; a cache, so failures are ignored."""
    key = key_for(path)
    if not lines or key is None:
        return
    lines = [seal(text, key) for text in lines]
    try:
        private.ensure_dir(path.parent)
        fd = private.open_file(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        try:
            body = b"".join(lines)
            size = os.fstat(fd).st_size
            if size == 0:
                body = HEADER + b"\n" + body
            elif os.pread(fd, 1, size - 1) != b"\n":
                body = b"\n" + body  # after a torn line: on a line of its own
            write_all(fd, body)
        finally:
            os.close(fd)
    except OSError:
        pass


def rewrite(path: Path, records: list[Record], packs: Packs) -> None:
    """Replace the file with `records` (newest first), read under `packs`: written oldest
    first, so a reader from the end meets the newest first."""
    key = key_for(path)
    if key is None:
        return
    body = [HEADER + b"\n", *(seal(text, key) for text in
                               [packs_line(packs), *(encode(r) for r in reversed(records))])]
    try:
        private.write_bytes_atomic(path, b"".join(body), durable=False)
    except OSError:
        pass


def packs_line(packs: Packs) -> bytes:
    return PACKS + json.dumps(packs, separators=(",", ":")).encode()
