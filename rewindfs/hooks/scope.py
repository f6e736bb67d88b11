"""The projects a shell command can reach beyond the one it starts in (`beyond`): the git
work tree of each git command in it (the top level, not the nearest marker), and the
project of each directory it runs in and each path it names (agent.classify.reach reads
them from the text). The hook checkpoints each of them as well, one normal checkpoint per
project (hooks.entry).

A path counts by the nearest directory of it that exists, symlinks followed (`rm -rf
link/` reaches where the link points); its project by the rules of the project markers
(agent.workdir: never the home directory or above, never a folder someone else can
write into). What is inside the Hermes home (the store, the mount) or a rewindfs mount is
a checkpoint, not a project, and is left out. At most MAX_PROJECTS are kept, the first
named first; the rest are said (`left_out`).
"""

from __future__ import annotations

import os
from pathlib import Path

from rewindfs.agent.classify.reach import reach
from rewindfs.agent.workdir import git_top_level, marked_root
from rewindfs.hooks import hooklog

MAX_PROJECTS = 8


class Scope:
    __slots__ = ("roots", "left_out")

    def __init__(self) -> None:
        self.roots: list[str] = []   # project roots, in the order the command reaches them
        self.left_out = 0            # projects past MAX_PROJECTS


def beyond(command: str, cwd: str) -> Scope:
    """The projects `command`, run in `cwd`, can reach (the one `cwd` is in among them:
    the caller knows it, and skips it)."""
    from rewindfs.store.objects import mounts

    home = os.path.expanduser("~")
    found = reach(command, cwd, home)
    fences = [os.fsencode(os.path.realpath(hooklog.hermes_home())), *mounts.rewindfs_mounts()]
    out, seen = Scope(), set()
    for kind, paths in ((git_top_level, found.git), (marked_root, found.dirs),
                        (marked_root, found.paths)):
        for path in paths:
            where = _existing(path)
            if where is None or mounts.inside(os.fsencode(where), fences) is not None:
                continue
            root = kind(where)
            if root is None or str(root) in seen:
                continue
            seen.add(str(root))
            if len(out.roots) < MAX_PROJECTS:
                out.roots.append(str(root))
            else:
                out.left_out += 1
    return out


def _existing(path: str) -> str | None:
    """The nearest directory of `path` that exists (itself, when it is one), resolved."""
    at = Path(path)
    for folder in (at, *at.parents):
        try:
            if folder.is_dir():
                return os.path.realpath(folder)
        except OSError:
            return None
    return None
