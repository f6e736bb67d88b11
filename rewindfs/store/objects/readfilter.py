"""Keep libgit2 from memory-mapping working-tree files.

When no filter applies to a file, libgit2 memory-maps it to build a patch against the
working tree (`rewind diff N`); if another process truncates the file meanwhile,
touching the vanished pages raises SIGBUS and kills the whole process (an agent
harness calling in process would die). When any filter applies, libgit2 reads the
file with read() instead, and a file that changes underneath yields an ordinary
error. This filter passes bytes through unchanged; the store's `info/attributes`
turns it on for every path (git itself ignores the attribute). Checkpoints do not
depend on it: the capture reads new and changed files itself (store.capture.fileread).
"""

from __future__ import annotations

import pygit2

ATTRIBUTE = "rewind-read"
_registered = False


class _PassThrough(pygit2.Filter):
    attributes = ATTRIBUTE

    def write(self, data: bytes, src: pygit2.FilterSource, write_next) -> None:
        write_next(data)


def register() -> None:
    """Register the filter once per process (idempotent)."""
    global _registered
    if not _registered:
        pygit2.filter_register(ATTRIBUTE, _PassThrough)
        _registered = True
