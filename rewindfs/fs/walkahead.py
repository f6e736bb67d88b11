"""Where the mount's read-ahead is in a walk below a listed directory (fs.blobs).

The walk goes depth first in listing order, where `tar`, `diff -r` and `grep -r` go
next, and stays at most a budget ahead of the reader: a window measured from the
reader's last listing of a directory the walk went through (not restarted there, or
it would run a budget further at every directory listed). Directories the reader has
passed are let go of, so a walk through millions of them keeps a budget's worth.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

# What a directory, and a file however small, weigh in the window: directories of tiny
# files (a tree of millions of them, fetched from a remote) are a thousand directories
# ahead at most, not millions.
DIR_WEIGHT, FILE_WEIGHT = 16384, 256

Wanted = tuple[str, int, int]  # a blob read ahead: (oid, size, inode showing it)
# (directory's inode, its files) for each directory below the one listed, in turn
Below = Iterator[tuple[int, Iterable[Wanted]]]


class Walk:
    """The read-ahead's walk below a listed directory: where it is, the directories it
    went through that the reader has not listed yet (with how much was walked up to
    each), and how far ahead of the reader's last listing it has read: `total -
    reader`, never more than the budget, however many directories the reader lists."""

    def __init__(self, below: Below | None):
        self.below = below
        self.seen: OrderedDict[int, int] = OrderedDict()  # directory -> total after it
        self.total = 0  # weight walked (bytes of files, DIR_WEIGHT per directory)
        self.reader = 0  # `total` at the reader's last listing

    def caught_up(self, directory: int) -> None:
        """The reader listed `directory`: what it listed before is behind it (let go)."""
        at = self.seen[directory]
        while self.seen and self.seen.popitem(last=False)[0] != directory:
            pass
        self.reader = max(self.reader, at)

    def paused(self, budget: int) -> bool:
        return self.below is None or self.total - self.reader > budget
