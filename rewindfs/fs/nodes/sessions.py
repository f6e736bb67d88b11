"""Another agent's session in the mount: one directory per listed step, and its end.

    <mnt>/kilo/<project>/<session id>/
        1.1/  1.2/  2.1/       the project as each step found it (turn.step)
        end/                   as the session's last step left it
        2.3 -> gone: ...       a step whose snapshot the agent's git gc removed

A step's directory is a stored tree like a checkpoint's (fs.nodes.tree), read through the
agent's snapshots, with the step's time as mtime and what the agent recorded
about it as extended attributes (`user.rewind.prompt`, `user.rewind.files`, ...).
Steps of one session form a lineage, so a file unchanged between steps is the same
inode with the time of the first step that had it.
"""

from __future__ import annotations

import json
import threading

from rewindfs.fs.inodes import inode_for
from rewindfs.fs.nodes.context import Context
from rewindfs.fs.nodes.node import DIR_MODE, LINK_MODE, Attributes, Directory, Node, Symlink
from rewindfs.fs.nodes.tree import TreeDir
from rewindfs.sources.history import Listed

END = b"end"
XATTR = b"user.rewind."


class StepDir(TreeDir):
    def __init__(self, context: Context, key: str, tree: str, mtime_ns: int,
                 xattrs: dict[str, str], previous: StepDir | None):
        super().__init__(context, key, b"", tree, mtime_ns, inode=inode_for("agent-step", key),
                         previous=(lambda: previous) if previous is not None else None)
        self._xattrs = {XATTR + k.encode(): v.encode() for k, v in xattrs.items()}

    def xattrs(self) -> dict[bytes, bytes]:
        return self._xattrs


class GoneStep(Symlink):
    """A step whose tree is gone: a link to nowhere that says so (`ls -l` shows it)."""

    def __init__(self, context: Context, key: str, agent: str, mtime_ns: int):
        super().__init__(context, inode_for("agent-gone", key))
        self._target = f"gone: pruned by {agent}'s git gc".encode()
        self.mtime_ns = mtime_ns

    def attributes(self) -> Attributes:
        return self._attrs(LINK_MODE, len(self._target), self.mtime_ns)

    def target(self) -> bytes:
        return self._target


class SessionDir(Directory):
    """Its steps change while the agent works: entries are replaced by `update`."""

    immutable = False
    stable_entries = False

    def __init__(self, context: Context, agent: str, session_id: str):
        super().__init__(context, inode_for("agent-session", agent, session_id))
        self.agent = agent
        self.session_id = session_id
        self._entries: list[tuple[bytes, Node]] = []
        self._by_name: dict[bytes, Node] = {}
        self._steps: dict[str, Node] = {}  # by step key: nodes outlive updates
        self._xattrs: dict[bytes, bytes] = {}
        self._mtime_ns = 0
        self._lock = threading.Lock()

    def attributes(self) -> Attributes:
        return self._attrs(DIR_MODE, 0, self._mtime_ns or self.context.started_ns)

    def xattrs(self) -> dict[bytes, bytes]:
        return self._xattrs

    def entries_ready(self) -> bool:
        return True

    def entries(self) -> list[tuple[bytes, Node]]:
        return self._entries

    def lookup(self, name: bytes) -> Node | None:
        return self._by_name.get(name)

    def names(self) -> dict[bytes, int]:
        return {name: node.inode for name, node in self._entries}

    def update(self, steps: list[tuple[Listed, str | None]], end: str | None) -> None:
        """The session's listed steps, oldest first, each with the tree to show (None: gone),
        and the tree its last step left (None: none recorded, or gone)."""
        entries: list[tuple[bytes, Node]] = []
        nodes: dict[str, Node] = {}
        previous: StepDir | None = None
        for item, tree in steps:
            key = f"{self.agent}:{item.step.id}"
            when = int(item.step.time * 1e9)
            node = self._steps.get(key)
            if tree is None:
                if not isinstance(node, GoneStep):
                    node = GoneStep(self.context, key, self.agent, when)
            elif not isinstance(node, StepDir) or node.tree_id != tree:
                node = StepDir(self.context, key, tree, when, _xattrs(item), previous)
            nodes[key] = node
            entries.append((item.step.name.encode(), node))
            if isinstance(node, StepDir):
                previous = node
        if end is not None and steps:
            last = steps[-1][0]
            key = f"{self.agent}:{self.session_id}:end:{end}"
            node = self._steps.get(key)
            if node is None:
                when = int((last.step.finish_time or last.step.time) * 1e9)
                node = StepDir(self.context, key, end, when, _session_xattrs(last), previous)
            nodes[key] = node
            entries.append((END, node))
        with self._lock:
            self._steps = nodes
            self._entries = entries
            self._by_name = dict(entries)
            self._mtime_ns = max((int(i.step.time * 1e9) for i, _ in steps), default=0)
            if steps:
                self._xattrs = {XATTR + k.encode(): v.encode()
                                for k, v in _session_xattrs(steps[-1][0]).items()}


def _session_xattrs(item: Listed) -> dict[str, str]:
    return {"agent": item.agent, "session": item.session.id, "title": item.session.title}


def _xattrs(item: Listed) -> dict[str, str]:
    return {**_session_xattrs(item), "ref": item.ref, "turn": str(item.turn.number),
            "step": item.step.name, "prompt": item.turn.prompt[:4096],
            "files": json.dumps(list(item.files)), "time": str(item.step.time)}
