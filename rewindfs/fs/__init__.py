"""The read-only FUSE mount of every checkpoint.

    model.py       the browsable model (root, project, checkpoint, tree, file, link nodes)
    blobs.py       file contents with bounded memory (LRU, spool files, read-ahead)
    walkahead.py   where the read-ahead is, at most a budget ahead of the reader
    trim.py        bounded memory however big a tree: nodes kept for the last directories
                   listed, the kernel asked to drop the oldest names it holds
    operations.py  where a mount's requests are answered (lookup, getattr, readdir, read):
                   the thin pyfuse3 adapter over the model (kernel cache or stock mode)
    capabilities.py  whether pyfuse3 is rewindfs's patched build
    watch.py       telling the kernel what changed (new, pruned, relabelled checkpoints)
    serve.py       running a mount until unmounted or signalled
    lifecycle.py   FUSE availability, mountpoint checks, background start, unmount
    locate.py      where a project's checkpoints are in a live mount
    changing.py    directories whose names change (the root, other agents' folders)
    agents.py      Kilo Code's and OpenCode's projects and sessions beside the checkpoints
    sessions.py    an agent session's steps, each a stored tree like a checkpoint's
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.fs.model import Model  # noqa: F401 - the face's export, for type checkers

# Imported on first use: `rewind list` asks fs.locate where a mount shows a checkpoint,
# and must not pay for the mount's model.
__all__, __getattr__, __dir__ = face("rewindfs.fs", {"Model": "rewindfs.fs.model"})
