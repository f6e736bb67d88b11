"""A project's checkpoints: listing, per-checkpoint stats, and resolving references.

Numbering (`checkpoints`, the one place it is decided; `rewind list` and the
mount both use it): 1 is the newest checkpoint. Pre-rollback snapshots (what a
restore, undo or revert saves first) are listed but not numbered (number 0), so a
number a person just used still names the same checkpoint after a restore: only a
new checkpoint shifts the numbers. Every checkpoint also has a stable id, its
commit hash: rewindfs never rewrites history, so an id keeps naming the same
checkpoint for good.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pygit2

from rewindfs.errors import InvalidInput, NotFound, RewindError, StoreDamaged, StoreError
from rewindfs.store import damage, timeref, trees
from rewindfs.store.labels import labels_by_commit
from rewindfs.store.layout import Layout, objects_dir
from rewindfs.store.locks import write_atomic
from rewindfs.store.prune import boundaries
from rewindfs.store.trailers import parse_message

_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")


@dataclass
class Checkpoint:
    number: int  # 1 = newest
    id: str
    time: int  # epoch seconds
    offset: int  # minutes east of UTC, as recorded
    reason: str
    trailers: dict[str, str]
    tree_id: str
    parent_id: str | None
    labels: list[str] = field(default_factory=list)
    root: bool = False  # the project's first checkpoint (no parent at all, not just pruned)

    @property
    def short(self) -> str:
        return self.id[:8]

    @property
    def pre_rollback(self) -> bool:
        return is_pre_rollback(self.reason, self.trailers)

    @property
    def precise_time(self) -> float:
        """Sub-second time recorded by rewindfs (commit times are whole seconds, too coarse
        to order a checkpoint against an agent write in the same second)."""
        try:
            return float(self.trailers[TIME_TRAILER])
        except (KeyError, ValueError):
            return float(self.time)

    @property
    def timestamp(self) -> str:
        """ISO 8601 with offset, as `git log --format=%aI` prints it (Hermes's field)."""
        tz = timezone(timedelta(minutes=self.offset))
        return datetime.fromtimestamp(self.time, tz).isoformat()


STATS_TRAILER = "Rewind-Stats"
TIME_TRAILER = "Rewind-Time"
RESTORE_TARGET_TRAILER = "Rewind-Restore-Target"
PRE_ROLLBACK_SUBJECT = "pre-rollback snapshot"


def is_pre_rollback(reason: str, trailers: dict[str, str]) -> bool:
    """Saved by a restore before it changed anything: rewindfs's trailer, or the subject
    Hermes gives its own pre-rollback snapshots."""
    return RESTORE_TARGET_TRAILER in trailers or reason.startswith(PRE_ROLLBACK_SUBJECT)


@dataclass
class Stats:
    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0

    def encode(self) -> str:
        return f"files={self.files_changed} insertions={self.insertions} deletions={self.deletions}"

    @classmethod
    def decode(cls, text: str) -> Stats | None:
        try:
            fields = dict(part.split("=", 1) for part in text.split())
            return cls(int(fields["files"]), int(fields["insertions"]), int(fields["deletions"]))
        except (KeyError, ValueError):
            return None


def walk(repo: pygit2.Repository, ref: str) -> list[pygit2.Commit]:
    """Commits on `ref`, newest first, following first parents down to the prune boundary."""
    try:
        reference = repo.references.get(ref)
    except (pygit2.GitError, ValueError) as exc:
        raise StoreError(f"ref {ref} is unreadable: {exc}") from exc
    if reference is None:
        return []
    out: list[pygit2.Commit] = []
    seen: set[pygit2.Oid] = set()
    stop = boundaries(repo)
    try:
        commit = reference.peel(pygit2.Commit)
        while commit is not None and commit.id not in seen:
            out.append(commit)
            seen.add(commit.id)
            if str(commit.id) in stop or not commit.parent_ids:
                break
            commit = commit.parents[0]
    except (pygit2.GitError, KeyError) as exc:
        # A missing parent ends the history (a pruned boundary); anything else is damage:
        # a commit that is there but unreadable, or a tip that cannot be read at all.
        if out:
            parent = str(out[-1].parent_ids[0])
            found = damage.object_problem(objects_dir(Path(repo.path)), parent)
            if found is None or found.problem == "missing object":
                return out
            raise found from exc
        raise StoreError(f"checkpoint history of {ref} is corrupt: {exc}") from exc
    return out


def checkpoints(repo: pygit2.Repository, h16: str) -> list[Checkpoint]:
    """Newest first: the project's chain, then labelled checkpoints pruned out of it.

    Numbered 1, 2, 3 ... newest first, skipping pre-rollback snapshots (number 0).
    """
    labels = labels_by_commit(repo, h16)
    chain = walk(repo, Layout.project_ref(h16))
    in_chain = {str(c.id) for c in chain}
    pinned = [repo.get(oid) for oid in labels if oid not in in_chain]
    pinned = sorted((c for c in pinned if c is not None), key=lambda c: -c.commit_time)
    stop = boundaries(repo)
    out = [_checkpoint(commit, 0, stop, labels.get(str(commit.id), []))
           for commit in [*chain, *pinned]]
    number = 0
    for cp in out:
        if not cp.pre_rollback or cp.labels:  # a labelled one was chosen by a person
            number += 1
            cp.number = number
    return out


def load(repo: pygit2.Repository, commit_id: str) -> Checkpoint:
    """The checkpoint at `commit_id` whether or not it is still listed (number 0).

    For ids rewindfs recorded itself (a step's tree, a pre-rollback snapshot): they
    stay usable after pruning drops them from the list, until git gc removes them.
    """
    try:
        commit = repo[commit_id].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise NotFound(f"checkpoint {commit_id[:8]} is no longer in the store") from exc
    return _checkpoint(commit, 0, frozenset(), [])


def _checkpoint(commit: pygit2.Commit, number: int, stop: frozenset[str],
                labels: list[str]) -> Checkpoint:
    """A commit as a checkpoint; a commit in `stop` (a prune boundary) has no parent."""
    reason, trailers = parse_message(commit.message)
    parent = None
    if commit.parent_ids and str(commit.id) not in stop:
        parent = str(commit.parent_ids[0])
    return Checkpoint(number=number, id=str(commit.id), time=commit.author.time,
                      offset=commit.author.offset, reason=reason, trailers=trailers,
                      tree_id=str(commit.tree_id), parent_id=parent, labels=sorted(labels),
                      root=not commit.parent_ids and not _records_parent(commit))


def stats(repo: pygit2.Repository, checkpoint: Checkpoint) -> Stats:
    """Files changed and lines added/removed against the previous checkpoint.

    rewindfs records them in the commit when it is made; for commits written by
    Hermes they are computed here. A checkpoint whose parent is gone (the first one,
    or the oldest kept after gc) counts its files, with no line counts.
    """
    recorded = checkpoint.trailers.get(STATS_TRAILER)
    if recorded and (parsed := Stats.decode(recorded)):
        return parsed
    parent = raw_parent(repo, checkpoint.id)
    return tree_stats(repo, parent.tree_id if parent is not None else None, checkpoint.tree_id)


def tree_stats(repo: pygit2.Repository, old_tree: str | None, new_tree: str,
               file_count: int | None = None) -> Stats:
    """Changes from `old_tree` (None: nothing before it) to `new_tree`."""
    if old_tree is None:
        if file_count is None:
            file_count = sum(1 for _ in trees.walk_entries(repo, new_tree))
        return Stats(file_count, 0, 0)
    diff = repo[old_tree].diff_to_tree(repo[new_tree])
    diff.find_similar()
    s = diff.stats
    return Stats(s.files_changed, s.insertions, s.deletions)


SIZES_FILE = "sizes.json"  # in the project's admin dir: {commit id: bytes}, a cache


def total_size(repo: pygit2.Repository, layout: Layout, h16: str, checkpoint: Checkpoint) -> int:
    """Bytes of every file in the checkpoint (what a first checkpoint stored).

    Reading each blob's header costs ~50 us per loose object, so the answer is
    cached per commit (a commit never changes) next to the project's index.
    """
    cache = layout.worktree_admin(h16) / SIZES_FILE
    try:
        known = json.loads(cache.read_text())
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    if isinstance(known.get(checkpoint.id), int):
        return known[checkpoint.id]
    odb = repo.odb
    size = sum(odb.read_header(pygit2.Oid(hex=e.oid))[1]
               for e in trees.walk_entries(repo, checkpoint.tree_id))
    if cache.parent.is_dir():
        try:
            write_atomic(cache, json.dumps({**known, checkpoint.id: size}))
        except OSError:
            pass  # only a cache
    return size


def _records_parent(commit: pygit2.Commit) -> bool:
    """Whether the commit object names a parent (libgit2 hides it past a prune boundary)."""
    try:
        head = commit.read_raw().split(b"\n\n", 1)[0]
    except pygit2.GitError:
        return False
    return head.startswith(b"parent ") or b"\nparent " in head


def raw_parent(repo: pygit2.Repository, commit_id: str) -> pygit2.Commit | None:
    """The recorded first parent, even past a prune boundary, if the object still exists."""
    raw = repo.odb.read(pygit2.Oid(hex=commit_id))[1]
    for line in raw.split(b"\n"):
        if line.startswith(b"parent "):
            try:
                return repo[line[7:47].decode()]
            except (KeyError, ValueError):
                return None
        if not line:
            break
    return None


def resolve(repo: pygit2.Repository, h16: str, reference: str) -> Checkpoint:
    """The checkpoint of project `h16` that `reference` names.

    Accepted: `latest` (= 1), a number (1 = newest), a label, a full or short hash
    (>= 4 hex digits; also of a pre-rollback snapshot), or a time (see store.timeref):
    the newest numbered checkpoint taken at or before it.
    """
    text = (reference or "").strip()
    if not text:
        raise InvalidInput("empty checkpoint reference")
    if text.startswith("-"):
        raise InvalidInput(f"invalid checkpoint reference {text!r}")
    history = checkpoints(repo, h16)
    if not history:
        raise NotFound("this project has no checkpoints")
    numbered = [cp for cp in history if cp.number]
    if text == "latest":
        return numbered[0] if numbered else history[0]
    if text.isdigit() and 1 <= int(text) <= len(numbered):
        return numbered[int(text) - 1]
    for cp in history:
        if text in cp.labels:
            return cp
    if _HEX.match(text):
        lowered = text.lower()
        matches = [cp for cp in history if cp.id.startswith(lowered)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InvalidInput(f"checkpoint reference {text!r} is ambiguous; use more digits")
        if _exists_elsewhere(repo, lowered):
            raise NotFound(f"{text} is not a checkpoint of this project")
    if text.isdigit():
        raise NotFound(f"no checkpoint {text}: this project has {len(numbered)}")
    _raise_if_damaged_label(repo, h16, text)
    when = timeref.parse(text)
    if when is not None:
        return _at_or_before(numbered, when, text)
    raise NotFound(
        f"unknown checkpoint {text!r} (use a number from `rewind list`, a hash or a label)"
    )


def resolve_with_path(repo: pygit2.Repository, h16: str, text: str,
                      to_relative: Callable[[str], bytes]) -> tuple[Checkpoint, bytes]:
    """`REF:PATH` (as in `git show REV:PATH`): the checkpoint and the project-relative path.

    References may hold colons themselves (`@yesterday-14:00`), so each colon is tried
    from the left and the first split whose reference resolves and whose path exists
    in that checkpoint wins; when none does, the first resolvable split is reported.
    """
    first_error: RewindError | None = None
    fallback: tuple[Checkpoint, bytes] | None = None
    at = text.find(":")
    while at >= 0:
        ref, path_text = text[:at], text[at + 1:]
        try:
            cp = resolve(repo, h16, ref)
            rel = to_relative(path_text) if path_text else b""
        except RewindError as exc:
            first_error = first_error or exc
        else:
            if not rel or trees.lookup_tree(repo, cp.tree_id, rel) is not None:
                return cp, rel
            fallback = fallback or (cp, rel)
        at = text.find(":", at + 1)
    if fallback is not None:
        return fallback
    if first_error is not None:
        raise first_error
    raise InvalidInput(f"expected REF:PATH, got {text!r}")


def _at_or_before(numbered: list[Checkpoint], when: float, text: str) -> Checkpoint:
    for cp in numbered:  # newest first
        if cp.precise_time <= when:
            return cp
    oldest = numbered[-1] if numbered else None
    since = f"; the oldest is from {timeref.describe(oldest.time)}" if oldest else ""
    raise NotFound(f"no checkpoint at or before {timeref.describe(when)} ({text!r}){since}")


def _raise_if_damaged_label(repo: pygit2.Repository, h16: str, text: str) -> None:
    """A label whose checkpoint cannot be read is damage, not an unknown name."""
    try:
        ref = repo.references.get(Layout.label_ref(h16, text))
    except ValueError:
        return  # not a valid ref name, so not a label
    if ref is None:
        return
    target = str(ref.target)
    objects = objects_dir(Path(repo.path))
    raise damage.object_problem(objects, target) or StoreDamaged(
        Path(repo.path) / Layout.label_ref(h16, text), f"names unreadable checkpoint {target[:8]}")


def _exists_elsewhere(repo: pygit2.Repository, prefix: str) -> bool:
    try:
        obj = repo.revparse_single(prefix) if len(prefix) < 40 else repo.get(prefix)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    return isinstance(obj, pygit2.Commit)
