"""The mount's top directory: one directory per project in the store, and `@NAME` per remote
the store fetched projects from (fs.nodes.remotes).

A project is named after its working directory's basename; when two projects
share a basename each gets `-<first 8 of its hash>` added, so no name depends on
which project happened to come first. A project whose record is gone is named by
its hash. Other agents' folders (`kilo/`, `opencode/`: fs.nodes.agents) sit beside them.
Re-read when older than the refresh interval.
"""

from __future__ import annotations

import os
from collections import Counter

from rewindfs.fs.inodes import ROOT_INODE
from rewindfs.fs.nodes.agents import AgentDir
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.listed import ListedDir, project_dir
from rewindfs.fs.nodes.node import Node
from rewindfs.fs.nodes.project import ProjectDir
from rewindfs.fs.nodes.remotes import PREFIX, RemoteDir, fetched
from rewindfs.sources.agents import AGENTS
from rewindfs.store.history import ProjectTip

XATTR_MODE = b"user.rewind.mount-mode"  # `rewind status` shows it


def project_names(tips: list[ProjectTip]) -> dict[bytes, ProjectTip]:
    """Name -> project, unique and independent of listing order. A project named like
    another agent's folder (`kilo`, `opencode`) always gets its hash added, whether or
    not that agent's folder is there."""

    def base(tip: ProjectTip) -> str:
        return tip.workdir.name if tip.workdir is not None and tip.workdir.name else tip.h16

    counts = Counter(base(t) for t in tips)
    names: dict[bytes, ProjectTip] = {}
    for tip in sorted(tips, key=lambda t: t.h16):
        name = base(tip)
        if (counts[name] > 1 or name in AGENTS) and name != tip.h16:
            name = f"{name}-{tip.h16[:8]}"
        if os.fsencode(name) in names:
            name = f"{base(tip)}-{tip.h16}"
        names[os.fsencode(name)] = tip
    return names


class RootDir(ListedDir):
    def __init__(self, context: Context):
        super().__init__(context, ROOT_INODE)
        self._projects: dict[str, ProjectDir] = {}
        self._remotes: dict[str, RemoteDir] = {}
        self._agents: dict[str, AgentDir] = {}

    def xattrs(self) -> dict[bytes, bytes]:
        mode = self.context.mount_mode
        return {XATTR_MODE: mode.encode()} if mode else {}

    def remote_dirs(self) -> dict[bytes, RemoteDir]:
        """`@NAME` -> the projects fetched from remote NAME."""
        return {name: node for name, node in self._entries if isinstance(node, RemoteDir)}

    def agent_dirs(self) -> list[AgentDir]:
        return [node for _, node in self._entries if isinstance(node, AgentDir)]

    def _read(self) -> list[tuple[bytes, Node]]:
        ctx = self.context
        ctx.browser.notice_repack()
        tips = ctx.browser.projects()
        if ctx.only_project:
            tips = [t for t in tips if t.h16 == ctx.only_project]
        projects: dict[str, ProjectDir] = {}
        entries: list[tuple[bytes, Node]] = []
        for name, tip in project_names(tips).items():
            node = projects[tip.h16] = project_dir(ctx, self._projects, tip.h16, tip.workdir)
            entries.append((name, node))
        remotes: dict[str, RemoteDir] = {}
        for remote, named in ({} if ctx.only_project else fetched(ctx)).items():
            name = os.fsencode(PREFIX + remote)
            if any(name == taken for taken, _ in entries):
                continue  # a local project's basename begins with @: it wins
            node = remotes[remote] = self._remotes.get(remote) or RemoteDir(ctx, remote)
            node.refresh(named)
            entries.append((name, node))
        agents = self._agent_dirs()
        entries += [(name.encode(), node) for name, node in agents.items()]
        self._projects, self._remotes, self._agents = projects, remotes, agents
        return entries

    def _agent_dirs(self) -> dict[str, AgentDir]:
        """A folder for each other agent that keeps snapshots on this machine."""
        out = {}
        for name, agent in AGENTS.items():
            data = agent.data_dir()
            if not (data / "snapshot").is_dir():
                continue
            node = self._agents.get(name)
            if node is None or node.data != data:
                node = AgentDir(self.context, agent, data, self.context.only_workdir)
            out[name] = node
        return out
