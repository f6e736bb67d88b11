"""Keeping the kernel's caches true while checkpoints, labels and projects come and go.

Inside a checkpoint nothing ever changes, so the kernel may cache everything there
for good. The root and project directories do change, and with kernel caching on
the kernel answers their listings (and the `1`/`latest`/label links in them)
without asking the daemon, so the daemon must tell it what changed. A watcher
thread re-reads the store every interval (one pass over the refs; a project's
checkpoint list only when its refs or the prune boundaries moved), compares each
directory's names and inodes with what it last told the kernel, and invalidates
exactly the difference:

* a name gone, or now meaning another node (a number or label link whose target
  moved gets a new inode: see link.PointerLink): `invalidate_entry(dir, name)`;
* anything changed in a directory: `invalidate_inode(dir)` (its cached listing and
  attributes; a new name needs this, since the kernel never saw it).

Invalidations run on this thread, never on the trio thread: the kernel may need an
answer from the daemon before it completes one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rewindfs.fs.inodes import ROOT_INODE
from rewindfs.fs.nodes.agents import AgentDir, AgentProjectDir
from rewindfs.fs.nodes.root import RootDir
from rewindfs.fs.nodes.sessions import SessionDir
from rewindfs.fs.periodic import Periodic

log = logging.getLogger(__name__)

InvalidateEntry = Callable[[int, bytes], None]
InvalidateInode = Callable[[int], None]


class Watcher(Periodic):
    name = "rewindfs-watch"

    def __init__(self, root: RootDir, invalidate_entry: InvalidateEntry,
                 invalidate_inode: InvalidateInode, interval: float = 1.0):
        super().__init__(interval)
        self.root = root
        self._invalidate_entry = invalidate_entry
        self._invalidate_inode = invalidate_inode
        self._told: dict[int, dict[bytes, int]] = {}  # dir inode -> names as last shown

    def failed(self, exc: Exception) -> None:
        # a bad moment in the store (a repack, a ref being written) or damage: said once
        self.root.context.failures.warning(str(exc),
                                           f"refreshing the project list failed: {exc}")

    def tick(self) -> None:
        """One pass: refresh, compare, invalidate."""
        root = self.root
        root.context.browser.notice_repack()
        shown = root.names()  # a directory not compared yet: the kernel may have this
        remote_shown = {r.inode: r.names() for r in root.remote_dirs().values()}
        root.refresh()  # the @NAME directories too
        self._compare(ROOT_INODE, shown, root.names())
        signatures = root.context.browser.signatures()
        projects = list(root.projects().values())
        remotes = list(root.remote_dirs().values())
        for remote in remotes:
            self._compare(remote.inode, remote_shown.get(remote.inode, {}), remote.names())
            projects += remote.projects().values()
        for project in projects:
            shown = project.names()
            try:
                project.refresh(signatures.get(project.h16, ()))
            except Exception as exc:  # noqa: BLE001 - one damaged project must not stop
                # the others from being refreshed; its own requests answer EIO meanwhile
                self.root.context.failures.warning(
                    str(exc), f"refreshing the checkpoints of {project.workdir or project.h16} "
                    f"failed: {exc}")
                continue
            self._compare(project.inode, shown, project.names())
        alive = {ROOT_INODE} | {p.inode for p in [*projects, *remotes]}
        for agent in root.agent_dirs():
            alive |= self._walk(agent)
        for inode in set(self._told) - alive:
            del self._told[inode]

    def _walk(self, directory: AgentDir | AgentProjectDir) -> set[int]:
        """Another agent's folder and what was looked at below it (fs.nodes.agents): each
        re-read only when the agent's records changed."""
        seen = {directory.inode}
        if not directory.loaded():
            return seen
        shown = directory.names()
        directory.refresh()
        self._compare(directory.inode, shown, directory.names())
        for child in directory.children():
            if isinstance(child, SessionDir):
                seen.add(child.inode)
                self._compare(child.inode, child.names(), child.names())
            else:
                seen |= self._walk(child)
        return seen

    def _compare(self, directory: int, shown: dict[bytes, int], now: dict[bytes, int]) -> None:
        before = self._told.get(directory, shown)
        self._told[directory] = now
        if before == now:
            return
        for name, inode in before.items():
            if now.get(name) != inode:
                self._call(self._invalidate_entry, directory, name)
        self._call(self._invalidate_inode, directory)

    @staticmethod
    def _call(fn: Callable[..., None], *args: object) -> None:
        try:
            fn(*args)
        except OSError as exc:  # ENOENT: the kernel holds nothing for it, nothing to drop
            log.debug("invalidation %s%r: %s", getattr(fn, "__name__", fn), args, exc)
