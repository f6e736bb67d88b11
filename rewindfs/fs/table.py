"""The nodes the kernel currently knows, with FUSE lookup counts.

Inode numbers come from `inodes.inode_for`, so this table only keeps nodes alive
while the kernel may still ask about them; `forget` lets them go.
"""

from __future__ import annotations

from itertools import islice

from rewindfs.fs.nodes.node import Node


class InodeTable:
    def __init__(self, root: Node):
        self._root = root
        self._nodes: dict[int, list] = {}  # inode -> [node, lookup count]

    def __len__(self) -> int:
        return len(self._nodes)

    def get(self, inode: int) -> Node | None:
        if inode == self._root.inode:
            return self._root
        held = self._nodes.get(inode)
        return held[0] if held is not None else None

    def remember(self, node: Node) -> None:
        """The kernel got one more reference to `node` (a lookup or a readdirplus entry).

        Nodes with the same inode are interchangeable (same blob, same checkpoint
        path), so the first one stays.
        """
        if node.inode == self._root.inode:
            return
        held = self._nodes.get(node.inode)
        if held is None:
            self._nodes[node.inode] = [node, 1]
        else:
            held[1] += 1

    def oldest(self, count: int) -> list[tuple[int, Node]]:
        """The `count` nodes the kernel got first (fs.trim drops the oldest it holds): a
        snapshot, copied by C code, so no request changes the table meanwhile."""
        return [(inode, held[0]) for inode, held in list(islice(self._nodes.items(), count))]

    def forget(self, inode: int, count: int) -> None:
        held = self._nodes.get(inode)
        if held is None:
            return
        held[1] -= count
        if held[1] <= 0:
            del self._nodes[inode]
