"""Who changed what, from the step log's marks (rewindfs.agent.timeline), and so what a
revert of one session's steps takes back.

Between two consecutive marks the files changed by some set of paths; those changes
belong to the steps whose window spans that stretch (a tool call's before and after, a
`begin_step`/`end_step` pair; a step still open spans everything after its begin), and
so to their sessions; a write tool's step owns only the files it names. A step a revert
took back no longer owns its changes, except of the files that revert kept. A stretch no
step spans (a person's edit between tool calls) is nobody's; a revert's or redo's own
change is nobody's either.

A revert to step S of session X takes back, for each file, the changes of X from S's
begin on: the file goes back to what it was just before X's first change to it after
that point. Never guessed:
- when another session owns a change to the file in the same stretch as X's (their tool
  calls overlapped and the change cannot be told apart), or any change to it after X's
  first, the file keeps its bytes and is named (`Kept`);
- a change of another session before X's first keeps its bytes the ordinary way: the file
  goes back to the state just before X's change, which holds it;
- a change after X's first that no step owns (a person's edit, a command the hooks let
  through unrecorded) is kept too while another session had steps in that time: it may
  be that session's.
With one session this is what a revert always did: everything the steps from S on changed,
back to before the first of them that changed it, and a person's edits in between kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rewindfs.agent.timeline import DISCARDED, DONE, OPEN, REVERTED, Mark, Step, Timeline
from rewindfs.errors import NotFound
from rewindfs.store.history import trees

SAME_TIME, LATER, UNRECORDED = "same time", "later", "unrecorded"


@dataclass
class Kept:
    """A file the revert leaves as it is: `sessions` (agent, session) changed it too, at
    the same time as the reverted session's tool call or after it (`when`); UNRECORDED:
    no step owns a later change, made while those sessions had steps."""

    path: bytes
    sessions: list[tuple[str, str]]
    when: str


@dataclass
class Decision:
    """Each file the revert takes back, and the mark whose state it goes back to; the
    files it keeps."""

    back_to: dict[bytes, int] = field(default_factory=dict)
    kept: dict[bytes, Kept] = field(default_factory=dict)
    marks: list[Mark] = field(default_factory=list)

    def entry(self, repo: Any, path: bytes) -> trees.Entry | None:
        return trees.lookup(repo, _tree(self.marks, self.back_to[path]), path)


def decide(repo: Any, tl: Timeline, chosen: list[Step], now_tree: str
           ) -> Decision:
    """What reverting `chosen` (the target step and the later steps of its session,
    timeline.Timeline.chosen) does, the files being `now_tree` now."""
    who = chosen[0].who
    marks = [*tl.marks, Mark(now_tree)]
    start = min(s.start for s in chosen)
    _check_present(repo, marks, start, chosen[0])
    spans = [s for s in tl.steps.values()
             if s.status in (OPEN, DONE, REVERTED, DISCARDED)
             and (s.stop is None or s.stop > start)]
    others_here = sorted({s.who for s in spans} - {who})
    out = Decision(marks=marks)
    for k in range(start, len(marks) - 1):
        if marks[k].own:
            continue
        old, new = _tree(marks, k), _tree(marks, k + 1)
        if old is None or new is None or old == new:
            continue
        spanning = [s for s in spans if s.start <= k and (s.stop is None or k < s.stop)]
        for change in trees.changes(repo, old, new):
            path = change.path
            covering = [s for s in spanning if s.files is None or path in s.files]
            owners = {s.who for s in covering if _owns(s, path)}
            others = sorted(owners - {who})
            mine = who in owners
            if path not in out.back_to:
                if mine:
                    out.back_to[path] = k
                    if others:
                        out.kept[path] = Kept(path, others, SAME_TIME)
            elif others and path not in out.kept:
                out.kept[path] = Kept(path, others, LATER)
            elif not covering and others_here and path not in out.kept:
                out.kept[path] = Kept(path, others_here, UNRECORDED)
    for path in out.kept:
        out.back_to.pop(path, None)
    return out


def _owns(step: Step, path: bytes) -> bool:
    """Whether the step still owns its change to `path`: a reverted step only where its
    revert kept the file."""
    return step.status in (OPEN, DONE) or path in step.kept


def _tree(marks: list[Mark], k: int) -> str | None:
    """The files at mark `k` (a mark that recorded none: as the mark before it)."""
    while k >= 0 and marks[k].tree is None:
        k -= 1
    return marks[k].tree if k >= 0 else None


def _check_present(repo: Any, marks: list[Mark], start: int,
                   first: Step) -> None:
    for mark in marks[start:]:
        if mark.tree is not None and mark.tree not in repo:
            raise NotFound(f"step {first.id} is too old to revert: git gc has removed "
                           "its checkpoint")
    if first.before_commit and first.before_commit not in repo:
        raise NotFound(f"step {first.id} is too old to revert: git gc has removed its "
                       "checkpoint")
