"""Other agents' snapshots in the mount, beside our checkpoints (read-only, like them).

    <mnt>/kilo/                    Kilo Code's projects (<mnt>/opencode/: OpenCode's)
        <project>/                 basename of its worktree (-<id> added on collision)
            <session id>/...       its sessions (fs.nodes.sessions)
            1 2 3 ... latest       links to `<session>/<step>`, numbered like
                                   `rewind list --agent kilo` (1 = newest)

The agent keeps writing while the mount lives: its records are read again when its
database (or the WAL beside it) changed, at most once per refresh interval, and
only for the projects someone looked at. A database that cannot be read right now
(locked, half migrated) keeps the last listing; the error is logged.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path

from rewindfs.errors import RewindError
from rewindfs.fs.inodes import inode_for
from rewindfs.fs.nodes.changing import ChangingDir
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.link import PointerLink
from rewindfs.fs.nodes.node import Node
from rewindfs.fs.nodes.sessions import SessionDir
from rewindfs.sources import reading
from rewindfs.sources.agents import Agent
from rewindfs.sources.history import AgentHistory, Listed, load
from rewindfs.sources.records import ProjectRecord
from rewindfs.store.foreign import ForeignBrowser, same_path

log = logging.getLogger(__name__)
BUSY_SECONDS = 0.2  # a mount never waits long for the agent's database: next time


class AgentDir(ChangingDir):
    """`<mnt>/kilo/`: the agent's projects (with `only`, just the one at that directory)."""

    def __init__(self, context: Context, agent: Agent, data: Path, only: Path | None = None):
        super().__init__(context, inode_for("agent", agent.name))
        self.agent = agent
        self.data = data
        self.only = only
        self._projects: dict[str, AgentProjectDir] = {}

    def children(self) -> list[AgentProjectDir]:
        return [node for _, node in self._entries if isinstance(node, AgentProjectDir)]

    def _signature(self) -> object:
        return self.agent.signature(self.data)

    def _read(self) -> list[tuple[bytes, Node]]:
        records = self.agent.records(self.data, BUSY_SECONDS)
        found = [p for p in records.projects()
                 if p.worktree and self.agent.snapshot_root(self.data, p.id).is_dir()]
        if self.only is not None:
            found = [p for p in found if same_path(p.worktree, str(self.only))
                     or str(self.only).startswith(p.worktree.rstrip("/") + "/")]
        entries: list[tuple[bytes, Node]] = []
        kept: dict[str, AgentProjectDir] = {}
        for name, record in project_names(found).items():
            node = self._projects.get(record.id)
            if node is None or node.record != record:
                node = AgentProjectDir(self.context, self.agent, self.data, record, self.only)
            kept[record.id] = node
            entries.append((name, node))
        self._projects = kept
        return entries


def project_names(found: list[ProjectRecord]) -> dict[bytes, ProjectRecord]:
    def base(record: ProjectRecord) -> str:
        return os.path.basename(record.worktree.rstrip("/")) or record.id

    counts = Counter(base(r) for r in found)
    out: dict[bytes, ProjectRecord] = {}
    for record in sorted(found, key=lambda r: r.id):
        name = base(record)
        if counts[name] > 1:
            name = f"{name}-{record.id[:8]}"
        out[os.fsencode(name)] = record
    return out


class AgentProjectDir(ChangingDir):
    """One project of the agent: its sessions and the numbered links."""

    has_pointers = True  # Model.resolve follows `1`, `latest` here

    def __init__(self, context: Context, agent: Agent, data: Path, record: ProjectRecord,
                 only: Path | None = None):
        super().__init__(context, inode_for("agent-project", agent.name, record.id))
        self.agent = agent
        self.data = data
        self.record = record
        self.only = only
        self.history: AgentHistory | None = None
        self._sessions: dict[str, SessionDir] = {}
        self._trees: Context | None = None
        self._folders: list[Path] = []

    def xattrs(self) -> dict[bytes, bytes]:
        return {b"user.rewind.workdir": os.fsencode(self.record.worktree),
                b"user.rewind.agent": self.agent.name.encode()}

    def children(self) -> list[SessionDir]:
        return list(self._sessions.values())

    def _signature(self) -> object:
        return self.agent.signature(self.data)

    def _read(self) -> list[tuple[bytes, Node]]:
        workdir = self.only or Path(self.record.worktree)
        history = load(self.agent, workdir, self.data, BUSY_SECONDS)
        self.history = history
        trees = self._tree_context(history)
        if isinstance(trees.browser, ForeignBrowser):
            trees.browser.notice_repack()
        by_session: dict[str, list[Listed]] = {}
        for item in reversed(history.listed):  # oldest first
            by_session.setdefault(item.session.id, []).append(item)
        sessions: dict[str, SessionDir] = {}
        entries: list[tuple[bytes, Node]] = []
        for session_id, items in by_session.items():
            node = self._sessions.get(session_id) or SessionDir(trees, self.agent.name,
                                                               session_id)
            node.update([(item, _tree_or_none(history, item)) for item in items],
                        _end_tree(history, items[-1]))
            sessions[session_id] = node
            entries.append((session_id.encode(), node))
        self._sessions = sessions
        newest_ns = int(history.listed[0].step.time * 1e9) if history.listed else 0
        pointers = [(str(item.number).encode(), item.path.encode()) for item in history.listed]
        if history.listed:
            pointers.append((b"latest", history.listed[0].path.encode()))
        for name, target in pointers:
            entries.append((name, PointerLink(self.context, f"{self.agent.name}:{self.record.id}",
                                              name, target, newest_ns)))
        return entries

    def _tree_context(self, history: AgentHistory) -> Context:
        """Trees and blobs are read through the agent's snapshots (the object folders may
        grow: a new snapshot dir for another worktree)."""
        folders = history.objects.folders
        if self._trees is None or folders != self._folders:
            browser = ForeignBrowser(history.objects, self.context.browser.layout)
            self._trees = self.context.reading_from(browser)
            self._folders = folders
        return self._trees


def _tree_or_none(history: AgentHistory, item: Listed) -> str | None:
    try:
        return reading.state_tree(history, item)
    except RewindError:
        return None


def _end_tree(history: AgentHistory, item: Listed) -> str | None:
    steps = [s for s in item.session.steps if s.finish_tree]
    if not steps:
        return None
    last = Listed(0, item.agent, item.session, item.session.turn_of(steps[-1]), steps[-1], ())
    try:
        return reading.finish_tree(history, last)
    except RewindError:
        return None
