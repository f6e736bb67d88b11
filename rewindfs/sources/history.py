"""One agent's history of one project: its sessions, and the steps `rewind list --agent`
shows, numbered like our checkpoints (1 = newest).

A project is found by its worktree (the agent records the absolute path), else, for
a project that moved since, by the id the agent gave it (cached in its git dir, or
its root commit). Listed are the steps that changed files in the project, and the
first step of every turn (the state before the turn, where the agent's own "revert
to here" goes back to); a step that only read or talked is not.

Trees are looked up in every snapshot git dir of the project and in the project's
own `.git/objects` (where OpenCode keeps some objects, and which a moved project
took with it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rewindfs.errors import NotFound
from rewindfs.sources import model
from rewindfs.sources.agents import Agent
from rewindfs.sources.database import BUSY_SECONDS
from rewindfs.sources.model import Session, Step, Turn
from rewindfs.sources.records import ProjectRecord, Records
from rewindfs.store.foreign import ForeignObjects, places


@dataclass(frozen=True)
class Listed:
    """A step as listed: its number, where it belongs, its files relative to the project."""

    number: int
    agent: str
    session: Session
    turn: Turn
    step: Step
    files: tuple[str, ...]

    @property
    def short_ref(self) -> str:
        return f"{self.agent}:{self.number}"

    @property
    def ref(self) -> str:
        """Stable for the step's life (the number shifts as new steps come)."""
        return f"{self.agent}:{self.session.id}/{self.step.id}"

    @property
    def path(self) -> str:
        """Its place in the mount below `<agent>/<project>/`."""
        return f"{self.session.id}/{self.step.name}"


@dataclass
class AgentHistory:
    agent: Agent
    workdir: Path  # the project as rewindfs knows it
    data: Path
    records: Records
    projects: list[ProjectRecord]
    sessions: list[Session] = field(default_factory=list)  # oldest first
    skipped: list[str] = field(default_factory=list)  # records that could not be read
    moved_from: str | None = None  # the worktree the agent recorded, when it is elsewhere

    @cached_property
    def objects(self) -> ForeignObjects:
        folders: list[Path] = []
        for project in self.projects:
            dirs = places.snapshot_dirs(self.agent.snapshot_root(self.data, project.id))
            folders += [d.objects for d in places.ordered(dirs, project.worktree)]
        gitdir = places.common_git_dir(self.workdir)
        if gitdir is not None:  # OpenCode's alternates; where a moved project's went
            folders.append(gitdir / "objects")
        return ForeignObjects(folders)

    @cached_property
    def listed(self) -> list[Listed]:
        """Newest first, numbered from 1."""
        chosen: list[tuple[Session, Turn, Step, tuple[str, ...]]] = []
        for session in self.sessions:
            for turn in session.turns:
                for step in turn.steps:
                    files = tuple(model.relative_files(step, session.worktree,
                                                       self.agent_root(session)))
                    in_here = bool(files) if step.files is not None else step.changed
                    if in_here or step.index == 1:
                        chosen.append((session, turn, step, files))
        chosen.sort(key=lambda item: (item[2].time, item[2].id), reverse=True)
        return [Listed(n, self.agent.name, s, t, step, files)
                for n, (s, t, step, files) in enumerate(chosen, start=1)]

    def agent_root(self, session: Session) -> str:
        """The project's directory in the agent's terms (where its paths point)."""
        if self.moved_from is not None:
            return session.worktree
        return str(self.workdir)

    def prefix(self, session: Session) -> bytes:
        """The project's path inside the agent's snapshot trees (b"" when they coincide)."""
        rel = os.path.relpath(self.agent_root(session), session.worktree)
        return b"" if rel == "." else os.fsencode(rel)

    def gone(self, step: Step) -> bool:
        return not self.objects.exists(step.start_tree)


def load(agent: Agent, workdir: Path, data: Path | None = None,
         busy_seconds: float = BUSY_SECONDS) -> AgentHistory:
    """The agent's history of the project at `workdir` (NotFound when it has none)."""
    data = data or agent.data_dir()
    records = agent.records(data, busy_seconds)
    projects, moved_from = _projects_of(agent, workdir, records.projects())
    if not projects:
        raise NotFound(f"no {agent.label} sessions for {workdir} (looked in {records.where})")
    worktrees = {p.id: p.worktree for p in projects}
    found = records.sessions(list(worktrees))
    history = records.history([s.id for s in found])
    recorded = _recorded_worktrees(agent, data, projects)
    sessions = sorted((model.build(s, _worktree_of(s.directory, worktrees[s.project_id],
                                                   recorded), history) for s in found),
                      key=lambda s: (s.time, s.id))
    return AgentHistory(agent, workdir, data, records, projects, sessions,
                        list(history.skipped), moved_from)


def _projects_of(agent: Agent, workdir: Path, projects: list[ProjectRecord]
                 ) -> tuple[list[ProjectRecord], str | None]:
    here = str(workdir)
    exact = [p for p in projects if p.worktree and places.same_path(p.worktree, here)]
    if exact:
        return exact, None
    # The project is a folder inside the agent's (rewindfs found a nearer marker).
    around = [p for p in projects if p.worktree and p.worktree != "/"
              and here.startswith(os.path.normpath(p.worktree) + os.sep)]
    if around:
        deepest = max(len(p.worktree) for p in around)
        return [p for p in around if len(p.worktree) == deepest], None
    ids = places.project_ids(workdir, agent.id_file)
    moved = [p for p in projects if p.id in ids]
    return moved, (moved[0].worktree if moved else None)


def _recorded_worktrees(agent: Agent, data: Path, projects: list[ProjectRecord]) -> list[str]:
    """Every worktree the project's snapshot dirs were made for (a project that moved
    and was used in both places has one for each)."""
    out = []
    for project in projects:
        for found in places.snapshot_dirs(agent.snapshot_root(data, project.id)):
            if found.worktree:
                out.append(found.worktree)
    return out


def _worktree_of(directory: str, current: str, recorded: list[str]) -> str:
    """Where the session's paths are rooted: the project's worktree, unless the session
    ran before the project moved there (then the older worktree holding its directory)."""
    if not directory or _inside(directory, current):
        return current
    holding = [w for w in recorded if _inside(directory, w)]
    return max(holding, key=len) if holding else current


def _inside(path: str, root: str) -> bool:
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
