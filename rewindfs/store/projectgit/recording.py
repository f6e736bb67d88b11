"""Recording a project repository's state with a checkpoint: what it costs is what is new.

Under the project lock, before the working tree is captured (take_locked's recorder):
the `.git` is inspected (bounds) and read (reading); its description (statetree) is
written to the store, which costs only the small files that changed. A description one
of the project's kept states already has is that state again: nothing is copied. Else
the objects the refs, the stash and the index name that no kept state reaches are
copied (copying: git's fetch; the first copy of a long history included), the state
commit is written, and the project's keeper (history.gitkeep) holds it before the
checkpoint that names it is committed. The checkpoint is due, even with no file
changed, when its state differs from the newest checkpoint's.

A repository that is refused (bounds) or cannot be copied costs the checkpoint nothing
but a note saying so; where the state is required (the pre-rollback snapshot of a
restore that changes `.git`), the refusal stops the restore before anything changes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pygit2

from rewindfs.errors import Refused, StoreError
from rewindfs.store.history import gitkeep
from rewindfs.store.history.snapshot import tip
from rewindfs.store.history.trailers import parse_message
from rewindfs.store.objects.layout import GIT_PREFIX
from rewindfs.store.objects.repo import Project
from rewindfs.store.projectgit import copying, reading, statetree
from rewindfs.store.projectgit.bounds import DEFAULT, Bounds, Refusal, inspect


@dataclass
class Recorded:
    state: str | None = None  # the state commit, gitkeep.NONE (no repository), or None
    refs: int = 0
    new: bool = False  # not the state of a checkpoint already kept
    first: bool = False  # the project's first recorded state: its history copied whole
    copied: copying.Copied | None = None
    left_out: list[str] = field(default_factory=list)
    refused: str | None = None

    def note(self) -> str | None:
        """The closing note: what was recorded and what it cost, or why nothing was."""
        if self.refused:
            return f"repository state not recorded: {self.refused}"
        if self.state is None or self.state == gitkeep.NONE:
            return None
        if not self.new:
            text = f"repository state recorded ({self.refs} refs; unchanged, nothing copied)"
        elif self.copied is None:
            text = f"repository state recorded ({self.refs} refs; no new objects)"
        else:
            c = self.copied
            what = "its history copied into the store" if self.first else "new objects"
            text = (f"repository state recorded ({self.refs} refs; {what}: {c.objects:,} "
                    f"objects, {_size(c.bytes)} in {c.seconds:.1f} s)")
        return text + "".join(f"; {why}" for why in self.left_out)


def record(project: Project, bounds: Bounds, *, required: bool = False) -> Recorded:
    """Record the state of the repository at the project's `.git` (Refusal: why not;
    StoreError: copying failed). No `.git` at all: gitkeep.NONE when `required`, else
    nothing."""
    gitdir = project.workdir / ".git"
    if not os.path.lexists(gitdir):
        return Recorded(state=gitkeep.NONE if required else None)
    left_out = inspect(gitdir, bounds)
    found = reading.read(gitdir, bounds)
    found.left_out[:0] = left_out
    repo = project.repo
    described = str(statetree.description(repo, found))
    kept = gitkeep.kept(repo, project.h16)
    for state in sorted(kept):
        if statetree.described_by(repo, state) == described:
            return Recorded(state, len(found.refs), left_out=found.left_out)
    held = _held_by(repo, kept)
    wanted = sorted(w for w in found.wants if w not in held)
    copied = None
    if wanted:
        first = not any(n.startswith(GIT_PREFIX) for n in repo.references)
        copied = copying.fetch(project.store.layout, gitdir, wanted, first, bounds.seconds)
        absent = [w for w in wanted if not repo.odb.exists(pygit2.Oid(hex=w))]
        if absent:
            raise StoreError(f"the repository's object {absent[0][:8]} was not copied "
                             f"({len(absent)} missing)")
    state = statetree.commit(repo, pygit2.Oid(hex=described), found)
    gitkeep.rebuild(repo, project.h16, also=[state])
    return Recorded(state, len(found.refs), new=True, first=not kept, copied=copied,
                    left_out=found.left_out)


class Recorder:
    """take_locked's recorder: the repository's state beside the checkpoint. `required`:
    a state that cannot be recorded stops the checkpoint (Refused) instead of a note."""

    def __init__(self, bounds: Bounds = DEFAULT, *, required: bool = False):
        self.bounds, self.required = bounds, required
        self.recorded = Recorded()

    def __call__(self, project: Project) -> tuple[dict[str, str], bool]:
        before = tip_state(project)
        try:
            self.recorded = record(project, self.bounds, required=self.required)
        except (Refusal, StoreError) as exc:
            if self.required:
                raise Refused(f"the repository as it is now could not be saved first "
                              f"({exc}); nothing was changed") from None
            self.recorded = Recorded(refused=str(exc))
        state = self.recorded.state
        if state is None:
            return {}, False
        return {gitkeep.TRAILER: state}, state != before

    def note(self) -> str | None:
        return self.recorded.note()


def tip_state(project: Project) -> str | None:
    """The repository state the project's newest checkpoint names."""
    head = tip(project)
    return gitkeep.state_of(parse_message(head.message)[1]) if head is not None else None


def _held_by(repo: pygit2.Repository, states: set[str]) -> set[str]:
    """What the kept states hold whole: their parents (each with its history), tags and
    kept objects: never copied again."""
    held: set[str] = set()
    for state in states:
        try:
            commit = repo[state].peel(pygit2.Commit)
            held.update(str(p) for p in commit.parent_ids)
            for entry in repo[commit.tree["kept"].id]:
                held.add(entry.name[:-4] if entry.name.endswith(".tag") else entry.name)
        except (KeyError, ValueError, pygit2.GitError):
            continue
    return held


def _size(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB" if n >= 1 << 20 else f"{n / 1024:,.0f} KiB"

