"""A directory whose names come from the store's refs and are re-read when stale: the mount's
top directory and each `@REMOTE/` directory (a project's directory has its own listing)."""

from __future__ import annotations

from rewindfs.fs.nodes.changing import ChangingDir
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.node import DIR_MODE, Attributes
from rewindfs.fs.nodes.project import ProjectDir


class ListedDir(ChangingDir):
    # The store is ours: a listing it cannot give is an error to show, not to hide.
    keeps_listing_on_error = False

    def attributes(self) -> Attributes:
        return self._attrs(DIR_MODE, 0, self._changed_ns or self.context.started_ns)

    def projects(self) -> dict[bytes, ProjectDir]:
        return {name: node for name, node in self._entries if isinstance(node, ProjectDir)}


def project_dir(context: Context, known: dict[str, ProjectDir], key: str, workdir
                ) -> ProjectDir:
    """The node of project `key` (a local hash or a fetched project's key), the one shown
    before when it still names the same directory, so it outlives renumbering."""
    node = known.get(key)
    return node if node is not None and node.workdir == workdir \
        else ProjectDir(context, key, workdir)
