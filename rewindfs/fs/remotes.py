"""`@NAME/` in the mount's top directory: the projects fetched from remote NAME.

Each is a project directory like a local one (numbers, `latest`, labels, a stable
directory per checkpoint), named as `rewind list --remote NAME` names it (the
original basename; `-<host>` or `-<machine>` when two share it). The list is the
store's mirror of the remote (store.remote.catalog), so a `rewind fetch` shows
within the refresh interval, as new checkpoints do.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rewindfs.fs.context import Context
from rewindfs.fs.inodes import inode_for
from rewindfs.fs.node import DIR_MODE, Attributes, Directory, Node
from rewindfs.fs.project import ProjectDir
from rewindfs.store.remote import catalog

PREFIX = "@"


def fetched(context: Context, remote: str | None = None
            ) -> dict[str, dict[str, catalog.RemoteProject]]:
    """Remote name -> (project name -> project), for every remote (or one)."""
    browser = context.browser
    if not browser.exists():
        return {}
    found = browser.read("the fetched projects",
                         lambda repo: catalog.remote_projects(repo, browser.layout, remote))
    by_remote: dict[str, list[catalog.RemoteProject]] = {}
    for project in found:
        by_remote.setdefault(project.remote, []).append(project)
    return {name: catalog.names(projects) for name, projects in by_remote.items()}


class RemoteDir(Directory):
    immutable = False
    stable_entries = False

    def __init__(self, context: Context, name: str):
        super().__init__(context, inode_for("remote", name))
        self.name = name
        self._entries: list[tuple[bytes, Node]] = []
        self._by_name: dict[bytes, Node] = {}
        self._projects: dict[str, ProjectDir] = {}  # by key: nodes outlive renaming
        self._refreshed_at: float | None = None
        self._changed_ns = 0
        self._lock = threading.Lock()

    def attributes(self) -> Attributes:
        return self._attrs(DIR_MODE, 0, self._changed_ns or self.context.started_ns)

    def names(self) -> dict[bytes, int]:
        return {name: node.inode for name, node in self._entries}

    def projects(self) -> dict[bytes, ProjectDir]:
        return {name: node for name, node in self._entries if isinstance(node, ProjectDir)}

    def entries_ready(self) -> bool:
        return not self.context.is_stale(self._refreshed_at)

    def entries(self) -> list[tuple[bytes, Node]]:
        self._refresh()
        return self._entries

    def lookup(self, name: bytes) -> Node | None:
        self._refresh()
        return self._by_name.get(name)

    def refresh(self, named: dict[str, catalog.RemoteProject] | None = None) -> None:
        """Re-read the list now (`named`: as just read for every remote by the root)."""
        self._refresh(force=True, named=named)

    def _refresh(self, force: bool = False,
                 named: dict[str, catalog.RemoteProject] | None = None) -> None:
        ctx = self.context
        if not force and not ctx.is_stale(self._refreshed_at):
            return
        with self._lock:
            if not force and not ctx.is_stale(self._refreshed_at):
                return
            if named is None:
                named = fetched(ctx, self.name).get(self.name, {})
            projects: dict[str, ProjectDir] = {}
            entries: list[tuple[bytes, Node]] = []
            for label, found in sorted(named.items()):
                workdir = Path(found.workdir) if found.workdir else None
                node = self._projects.get(found.key)
                if node is None or node.workdir != workdir:
                    node = ProjectDir(ctx, found.key, workdir)
                projects[found.key] = node
                entries.append((label.encode(), node))
            before = self.names()
            self._projects, self._entries, self._by_name = projects, entries, dict(entries)
            if self._refreshed_at is not None and self.names() != before:
                self._changed_ns = time.time_ns()
            self._refreshed_at = ctx.clock()
