"""A project's checkpoints: the chain behind its ref, listed and numbered (1 = newest).

Numbering (`checkpoints`, with the model's `number`, store.history.checkpoint, which
the quick read path shares; `rewind list` and the mount both use it): 1 is the newest
checkpoint. Pre-rollback snapshots (what a
restore, undo or revert saves first) are listed but not numbered (number 0), so a
number a person just used still names the same checkpoint after a restore: only a
new checkpoint shifts the numbers. Every checkpoint also has a stable id, its
commit hash: rewindfs never rewrites history, so an id keeps naming the same
checkpoint for good. A history broken in the middle (store.history.breaks) is
numbered down to the break only: what is recovered past it has no number, as nobody
can say how many checkpoints the missing part held. Resolving what a person types:
references; stats: changestats.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from rewindfs.errors import NotFound, StoreDamaged, StoreError

# The model (what a checkpoint is, its number), without libgit2: store.history.checkpoint.
from rewindfs.store.history.checkpoint import (  # noqa: F401 - names kept here for callers
    PRE_ROLLBACK_SUBJECT,
    RESTORE_TARGET_TRAILER,
    STATS_TRAILER,
    TIME_TRAILER,
    Checkpoint,
    History,
    is_pre_rollback,
    make,
    number,
    pinned_order,
    year_of,
)
from rewindfs.store.history.labels import labels_by_commit
from rewindfs.store.history.records import listpage, recordfile, records
from rewindfs.store.history.shallow import boundaries, common_dir
from rewindfs.store.objects import damage, notices
from rewindfs.store.objects.layout import Layout, objects_dir

if TYPE_CHECKING:  # a broken history's modules load only when one breaks
    from rewindfs.store.history.breaks import Break


def walk(repo: pygit2.Repository, ref: str) -> list[pygit2.Commit]:
    """Commits on `ref`, newest first, following first parents down to the prune boundary
    or to a break, which is said once (store.objects.notices)."""
    commits, broken = walk_to_break(repo, ref)
    if broken is not None:
        notices.notice(broken.warning())
    return commits


def walk_to_break(repo: pygit2.Repository, ref: str
                  ) -> tuple[list[pygit2.Commit], Break | None]:
    """Commits on `ref`, newest first, down to the prune boundary; and where the chain
    breaks before it, if it does (a parent missing or unreadable). A tip that cannot be
    read at all is StoreError: there is no chain to number."""
    try:
        reference = repo.references.get(ref)
    except (pygit2.GitError, ValueError) as exc:
        raise StoreError(f"ref {ref} is unreadable: {exc}") from exc
    if reference is None:
        return [], None
    try:
        commit = reference.peel(pygit2.Commit)
    except (pygit2.GitError, KeyError) as exc:
        raise StoreError(f"checkpoint history of {ref} is corrupt: {exc}") from exc
    out: list[pygit2.Commit] = []
    seen: set[pygit2.Oid] = set()
    stop = boundaries(repo)
    while commit.id not in seen:
        out.append(commit)
        seen.add(commit.id)
        if str(commit.id) in stop or not commit.parent_ids:
            break
        try:
            commit = commit.parents[0]
        except (pygit2.GitError, KeyError) as exc:
            # Not a prune boundary (history stops there before its parent is gone): the
            # parent is damage, missing or unreadable, and the chain breaks here.
            from rewindfs.store.history.breaks import Break
            from rewindfs.store.objects.verify import loose

            parent = str(commit.parent_ids[0])
            objects = objects_dir(Path(repo.path))
            found = damage.object_problem(objects, parent) or StoreDamaged(
                loose.path_of(objects, parent), f"unreadable: {exc}")
            return out, Break(str(commit.id), parent, found)
    return out, None


def checkpoints(repo: pygit2.Repository, h16: str, *, from_objects: bool = False) -> History:
    """Newest first: the project's chain, then labelled checkpoints pruned out of it.

    Numbered 1, 2, 3 ... newest first, skipping pre-rollback snapshots (number 0).
    Read from the project's records (store.history.records.records) when the objects agree
    with them, else (or with `from_objects`) from the commits themselves. When the
    chain breaks (`broken`, said once), it is numbered down to the break, and what is
    recovered past it (labelled ones among them) follows unnumbered, `past_break`.
    """
    labels = labels_by_commit(repo, h16)
    shallow = recordfile.shallow_key(common_dir(repo))
    stop = boundaries(repo)
    recorded = None if from_objects else _from_records(repo, h16, labels, stop, shallow)
    if recorded is not None:
        out = History(recorded)
        numbered: list[Checkpoint] = out
    else:
        chain, broken = walk_to_break(repo, Layout.project_ref(h16))
        in_chain = {str(c.id) for c in chain}
        if broken is None:
            older = [repo.get(oid) for oid in labels if oid not in in_chain]
            older = sorted((c for c in older if c is not None),
                           key=lambda c: pinned_order(c.commit_time, str(c.id)))
        else:
            notices.notice(broken.warning())
            from rewindfs.store.history import breaks

            older = breaks.recover(repo, h16, in_chain, stop)
        out = History(_checkpoint(commit, stop, labels.get(str(commit.id), []))
                      for commit in [*chain, *older])
        out.broken = broken
        numbered = out[:len(chain)] if broken is not None else out
        for cp in out[len(numbered):]:
            cp.past_break = True
    number(numbered)
    _say_clamped(out, h16)
    return out


def _say_clamped(history: list[Checkpoint], h16: str) -> None:
    """Times no calendar shows (a remote's commits can say anything), said once."""
    odd = [cp for cp in history if cp.clamped is not None]
    if odd:
        first = odd[0]
        notices.notice(f"{len(odd)} checkpoint(s) of {h16} have a time or time zone out of "
                       f"range (checkpoint {first.short}: year {year_of(first.clamped)}); "
                       f"shown as {first.timestamp}")


def recorded_chain(repo: pygit2.Repository, h16: str, stop: frozenset[str] | None = None,
                   recall: records.Recall | None = None) -> list[records.Record] | None:
    """The project's chain (newest first) from its records, recording commits read for the
    first time; None when the objects must decide (a commit is gone or unreadable, the
    ref is broken): `walk` then says what is wrong, the one way it always does."""
    shallow = recordfile.shallow_key(common_dir(repo))
    stop = boundaries(repo) if stop is None else stop
    own = recall is None
    recall = recall or records.Recall(repo, common_dir(repo), h16)
    tip = _tip(repo, h16)
    if tip is None:
        return None
    out: list[records.Record] = []
    seen: set[str] = set()
    current: str | None = tip or None
    while current is not None:
        if current in seen:
            return None  # a cycle: damage
        seen.add(current)
        record = recall.get(current)
        if record is None:
            return None
        out.append(record)
        if current in stop:
            break
        current = record.parent
    if own:
        recall.save(out, _summary_due(repo, recall, out, stop, shallow, None))
    return out


def newest(repo: pygit2.Repository, h16: str) -> str | None:
    """The commit id the project's ref names now ("" when there is none, None when the ref
    is broken): what a live view compares to see that a checkpoint was taken."""
    return _tip(repo, h16)


def _tip(repo: pygit2.Repository, h16: str) -> str | None:
    """The project ref's commit id ("" when there is none); None when the ref is broken."""
    try:
        reference = repo.references.get(Layout.project_ref(h16))
        return "" if reference is None else str(reference.target)
    except (pygit2.GitError, ValueError):
        return None


def _summary_due(repo: pygit2.Repository, recall: records.Recall, chain: list[records.Record],
                 stop: frozenset[str], shallow: list[int], labels: list[str] | None
                 ) -> recordfile.Summary | None:
    """A summary of `chain` (whole) to write, unless the newest one is close enough to its
    tip (store.history.records.listpage) or the prune boundary moved while it was read."""
    if not chain or recordfile.shallow_key(common_dir(repo)) != shallow \
            or boundaries(repo) != stop:
        return None
    wanted = None if labels is None else sorted(set(labels))
    known = None if recall.rewrites(chain) else recall.summary
    if known is not None and known.shallow == shallow \
            and (wanted is None or known.labels == wanted) \
            and known.tip in {r.id for r in chain[:listpage.SUMMARY_EVERY]}:
        return None
    return listpage.summarize(chain, shallow, wanted)


def page(repo: pygit2.Repository, h16: str) -> listpage.Page | None:
    """The project's checkpoints as `checkpoints` lists them, read from the tip only as far
    as they are asked for (store.history.records.listpage); None when they must be read whole
    (no usable summary in the records, packs changed since, a commit that cannot be
    read: `checkpoints` then reads them and writes a summary)."""
    store = common_dir(repo)
    shallow = recordfile.shallow_key(store)
    stop = boundaries(repo)
    labels = labels_by_commit(repo, h16)
    tip = _tip(repo, h16)
    if not tip:
        return None
    recall = records.Recall(repo, store, h16, lazy=True)
    if recall.summary is None or recall.foreign or not recall.packs_ok():
        return None
    found = listpage.from_tip(tip, stop, recall.get, recall.summary, shallow, list(labels))
    if found is None:
        return None
    walked, summary, whole = found
    pinned = listpage.pinned_records(labels, summary, walked, recall.get)
    if pinned is None:
        return None
    due = whole or len(walked) >= listpage.SUMMARY_EVERY
    recall.save(walked, summary if due else None)
    return listpage.Page(summary, walked, recall.get, stop, labels, pinned, repo.odb.exists,
                         recall.widen)


def length(repo: pygit2.Repository, h16: str) -> int | None:
    """How many checkpoints the project's chain holds, from its records' summary and the
    checkpoints taken since (None: not known without walking it)."""
    store = common_dir(repo)
    shallow = recordfile.shallow_key(store)
    stop = boundaries(repo)
    tip = _tip(repo, h16)
    if not tip:
        return None if tip is None else 0
    recall = records.Recall(repo, store, h16, lazy=True)
    found = listpage.from_tip(tip, stop, recall.get, recall.summary, shallow, None)
    if found is None:
        return None
    walked, summary, whole = found
    recall.save(walked, summary if whole or len(walked) >= listpage.SUMMARY_EVERY else None)
    return summary.count


def _from_records(repo: pygit2.Repository, h16: str, labels: dict[str, list[str]],
                  stop: frozenset[str], shallow: list[int]) -> list[Checkpoint] | None:
    recall = records.Recall(repo, common_dir(repo), h16)
    chain = recorded_chain(repo, h16, stop, recall)
    if chain is None:
        return None
    in_chain = {r.id for r in chain}
    pinned = []
    for oid in labels:
        if oid not in in_chain:
            record = recall.get(oid)
            if record is None:
                return None  # a labelled commit that cannot be read: the objects say why
            pinned.append(record)
    pinned.sort(key=lambda r: pinned_order(r.commit_time, r.id))
    recall.save(chain + pinned, _summary_due(repo, recall, chain, stop, shallow, list(labels)))
    exists = repo.odb.exists
    out = []
    for at, record in enumerate([*chain, *pinned]):
        # The oldest of the chain and pinned ones may have lost their parent to gc since
        # they were recorded: then they count as parentless, as when read from the objects.
        edge = at >= len(chain) - 1
        kept = not edge or record.parent is None or exists(record.parent)
        out.append(Checkpoint(
            number=0, id=record.id, time=record.time, offset=record.offset,
            reason=record.reason, trailers=record.trailers, tree_id=record.tree,
            parent_id=record.parent if record.id not in stop else None,
            labels=sorted(labels.get(record.id, [])), root=record.parent is None,
            record=record if kept else None))
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
    return _checkpoint(commit, frozenset(), [])


def _checkpoint(commit: pygit2.Commit, stop: frozenset[str], labels: list[str]) -> Checkpoint:
    return make(str(commit.id), str(commit.tree_id), [str(p) for p in commit.parent_ids],
                commit.author.time, commit.author.offset, commit.message, stop, labels,
                records_parent=bool(commit.parent_ids) or _records_parent(commit))


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


