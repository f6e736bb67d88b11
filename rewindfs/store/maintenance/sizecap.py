"""max_total_size_mb: drop the oldest checkpoints across projects, until under.

Deciding is cheap first and exact last:

1. The physical size (pack files plus loose objects, one scandir) is compared with
   the cap; under it, nothing else happens.
2. Over it, git measures the *live* size: objects reachable from the refs,
   honouring the prune boundary. Garbage that gc has not reclaimed yet does not
   count, so history is never dropped to make room that gc will make anyway.
3. Candidates are the kept unlabelled checkpoints of every project, oldest first by
   when they were taken (to the microsecond rewindfs records; each project's own in
   the order of its chain), never a project's newest one; labelled checkpoints are
   pinned and not counted. Each is
   priced by what its tree holds that the next checkpoint's does not (`treediff`,
   sizes on disk from git). That overestimates what a drop frees, so candidates are
   added until the estimate covers the excess, which errs towards too few.
4. git measures the live size again as if the new boundaries were in place (a
   temporary shallow file; nothing is written); while still over, more candidates
   are added and measured again, a few times at most.

Applying moves each project's boundary to its planned commit in `shallow`; gc
then reclaims the space (after its grace period).
"""

from __future__ import annotations

import heapq
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from rewindfs.store.history.shallow import add_boundaries, boundaries
from rewindfs.store.history.trailers import TIME_TRAILER, parse_message
from rewindfs.store.maintenance import repostates, treediff
from rewindfs.store.maintenance.inventory import History, histories
from rewindfs.store.maintenance.progress import Progress, quiet
from rewindfs.store.maintenance.sizes import disk_sizes, live_bytes, objects_bytes
from rewindfs.store.objects.layout import Layout

MEASUREMENTS = 4  # exact measurements of a plan before settling for it
MiB = 1024 * 1024


@dataclass
class Drop:
    h16: str
    commit: str
    time: float  # when it was taken
    estimate: int | None = None  # bytes it is expected to free
    reason: str = ""  # its own reason, for the record of what went


@dataclass
class CapPlan:
    cap: int
    physical: int
    live: int | None = None  # None: not measured (physical size under the cap)
    expected_live: int | None = None  # live size once the drops are applied
    drops: list[Drop] = field(default_factory=list)
    boundaries: dict[str, set[str]] = field(default_factory=dict)  # h16 -> new shallow entries
    exhausted: bool = False  # every droppable checkpoint is in `drops`

    @property
    def over(self) -> bool:
        return self.live is not None and self.live > self.cap


def plan(layout: Layout, repo: pygit2.Repository, cap_bytes: int, *,
         exclude: set[str] = frozenset(), progress: Progress = quiet) -> CapPlan:
    """What to drop to bring the live store under `cap_bytes` (projects in `exclude` ignored:
    they are about to be removed)."""
    result = CapPlan(cap_bytes, objects_bytes(layout))
    if cap_bytes <= 0 or result.physical <= cap_bytes:
        return result
    refs = [n for n in repo.references if not exclude.intersection(n.split("/"))]
    result.live = live_bytes(layout, refs)
    if result.live <= cap_bytes:
        return result
    projects = {h: hist for h, hist in histories(repo).items() if h not in exclude}
    queue = _candidates(repo, projects, progress)
    expected, used = result.live, 0
    for _ in range(MEASUREMENTS):
        taken, excess = 0, expected - cap_bytes
        while used < len(queue) and taken < excess:
            if queue[used].estimate is None:
                _price(layout, repo, projects, queue[used:used + len(projects)])
            taken += queue[used].estimate or 0
            used += 1
        result.drops = queue[:used]
        result.boundaries = _new_boundaries(projects, result.drops)
        expected = _measure(layout, repo, _tips(repo, refs, projects, result.boundaries),
                            result.boundaries)
        result.exhausted = used == len(queue)
        if expected <= cap_bytes or result.exhausted:
            break
    result.expected_live = expected
    return result


def apply(layout: Layout, repo: pygit2.Repository, cap_plan: CapPlan) -> int:
    """Move the boundaries; returns how many checkpoints were dropped."""
    wanted = set().union(*cap_plan.boundaries.values()) if cap_plan.boundaries else set()
    if wanted:
        add_boundaries(repo, layout, wanted)
    return len(cap_plan.drops)


def _candidates(repo: pygit2.Repository, projects: dict[str, History],
                progress: Progress) -> list[Drop]:
    """Oldest first across projects: each project's droppable checkpoints in the order of
    its chain (oldest first), merged by when they were taken."""
    per_project: list[list[Drop]] = []
    for hist in progress(list(projects.values()), "reading histories"):
        droppable = hist.unlabelled[1:]  # never the newest: a project keeps one checkpoint
        per_project.append([_drop(hist.h16, c) for c in reversed(droppable)])
    return list(heapq.merge(*per_project, key=lambda d: (d.time, d.h16)))


def _drop(h16: str, commit: pygit2.Commit) -> Drop:
    reason, trailers = parse_message(commit.message)
    try:
        when = float(trailers[TIME_TRAILER])
    except (KeyError, ValueError):
        when = float(commit.commit_time)
    return Drop(h16, str(commit.id), when, reason=reason)


def _price(layout: Layout, repo: pygit2.Repository, projects: dict[str, History],
           batch: list[Drop]) -> None:
    """Estimate what each drop frees: its commit, plus what its tree has and the next lacks."""
    batch = [d for d in batch if d.estimate is None]
    owned: dict[int, set[str]] = {}
    for i, drop in enumerate(batch):
        chain = projects[drop.h16].chain
        position = next(k for k, c in enumerate(chain) if str(c.id) == drop.commit)
        newer = chain[position - 1].tree_id if position > 0 else None
        owned[i] = {drop.commit} | treediff.only_in(repo, chain[position].tree_id, newer)
    sizes = disk_sizes(layout, set().union(*owned.values()) if owned else ())
    for i, drop in enumerate(batch):
        chain = projects[drop.h16].chain
        position = next(k for k, c in enumerate(chain) if str(c.id) == drop.commit)
        drop.estimate = sum(sizes.get(oid, 0) for oid in owned[i]) + \
            repostates.only_its_state(layout, chain[position], chain[:position])


def _new_boundaries(projects: dict[str, History], drops: list[Drop]) -> dict[str, set[str]]:
    """Per project: the oldest kept checkpoint after the drops, and labelled ones beyond it."""
    dropped: dict[str, int] = {}
    for drop in drops:
        dropped[drop.h16] = dropped.get(drop.h16, 0) + 1
    out: dict[str, set[str]] = {}
    for h16, count in dropped.items():
        hist = projects[h16]
        unlabelled = hist.unlabelled
        oldest_kept = unlabelled[len(unlabelled) - count - 1]
        position = next(i for i, c in enumerate(hist.chain) if c.id == oldest_kept.id)
        pinned = {str(c.id) for c in hist.chain[position + 1:] if str(c.id) in hist.labelled}
        out[h16] = {str(oldest_kept.id)} | pinned
    return out


def _tips(repo: pygit2.Repository, refs: list[str], projects: dict[str, History],
          planned: dict[str, set[str]]) -> list[str]:
    """What a planned measurement starts from: the refs, with the repository states that
    only the checkpoints the plan keeps name in place of the keepers (repostates)."""
    kept = []
    for h16, hist in projects.items():
        chain, pinned = hist.chain, [c for c in hist.chain if str(c.id) in hist.labelled]
        cut = len(chain)
        for position, commit in enumerate(chain):
            if str(commit.id) in planned.get(h16, ()) and str(commit.id) not in hist.labelled:
                cut = position + 1
                break
        kept += chain[:cut] + [c for c in pinned if c not in chain[:cut]] + \
            [repo[oid] for oid in hist.pinned]
    return repostates.tips_for(refs, kept)


def _measure(layout: Layout, repo: pygit2.Repository, refs: list[str],
             planned: dict[str, set[str]]) -> int:
    """Live size as if `planned` boundaries were already in `shallow` (nothing is written)."""
    entries = set(boundaries(repo)).union(*planned.values())
    fd, name = tempfile.mkstemp(prefix="shallow-plan-", dir=layout.store / "locks")
    try:
        with os.fdopen(fd, "w") as out:
            out.write("".join(f"{c}\n" for c in sorted(entries)))
        return live_bytes(layout, refs, shallow_file=Path(name))
    finally:
        os.unlink(name)
