"""`@NAME/` in the mount's top directory: the projects fetched from remote NAME.

Each is a project directory like a local one (numbers, `latest`, labels, a stable
directory per checkpoint), named as `rewind list --remote NAME` names it (the
original basename; `-<host>` or `-<machine>` when two share it). The list is the
store's mirror of the remote (store.remote.catalog), so a `rewind fetch` shows
within the refresh interval, as new checkpoints do.
"""

from __future__ import annotations

from pathlib import Path

from rewindfs.fs.inodes import inode_for
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.listed import ListedDir, project_dir
from rewindfs.fs.nodes.node import Node
from rewindfs.fs.nodes.project import ProjectDir
from rewindfs.store.history import trees
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


class RemoteDir(ListedDir):
    def __init__(self, context: Context, name: str):
        super().__init__(context, inode_for("remote", name))
        self.name = name
        self._projects: dict[str, ProjectDir] = {}  # by key: nodes outlive renaming

    def refresh(self, named: dict[str, catalog.RemoteProject] | None = None) -> None:
        """Re-read the list now (`named`: as just read for every remote by the root)."""
        self._refresh(force=True, named=named)

    def _read(self, named: dict[str, catalog.RemoteProject] | None = None
              ) -> list[tuple[bytes, Node]]:
        ctx = self.context
        if named is None:
            named = fetched(ctx, self.name).get(self.name, {})
        projects: dict[str, ProjectDir] = {}
        entries: list[tuple[bytes, Node]] = []
        for label, found in sorted(named.items()):
            if trees.unsafe_name(label.encode()) is not None:
                continue  # (records are validated: store.remote.records) never a path
            workdir = Path(found.workdir) if found.workdir else None
            node = projects[found.key] = project_dir(ctx, self._projects, found.key, workdir)
            entries.append((label.encode(), node))
        self._projects = projects
        return entries
