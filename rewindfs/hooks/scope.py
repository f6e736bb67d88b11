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
named first; the rest are said (`left_out`). A path it names that exists but is in no
project (`/tmp/build`, `~/notes`, `/etc/hosts`) is no checkpoint's: those are listed
(`outside`), for the hook to say when the command may change them.
"""

from __future__ import annotations

import os
from pathlib import Path

from rewindfs.agent.classify.reach import reach
from rewindfs.agent.workdir import git_top_level, marked_root
from rewindfs.hooks import hooklog

MAX_PROJECTS = 8


class Scope:
    __slots__ = ("roots", "left_out", "outside")

    def __init__(self) -> None:
        self.roots: list[str] = []   # project roots, in the order the command reaches them
        self.left_out = 0            # projects past MAX_PROJECTS
        self.outside: list[str] = []   # existing paths it names that are in no project


def beyond(command: str, cwd: str) -> Scope:
    """The projects `command`, run in `cwd`, can reach besides the one `cwd` is in (the
    caller's own), and the existing paths it names that are in no project."""
    found = reach(command, cwd, os.path.expanduser("~"))
    here = _existing(cwd)
    own = str(marked_root(Path(here))) if here is not None else ""
    roots: list[str] = []
    out = Scope()
    for kind, paths in ((git_top_level, found.git), (marked_root, found.dirs),
                        (marked_root, found.paths)):
        for path in paths:
            where = _existing(path)
            root = kind(Path(where)) if where is not None else None
            if root is not None and str(root) not in roots and str(root) != own:
                roots.append(str(root))
            elif root is None and paths is found.paths and os.path.lexists(path) and \
                    len(out.outside) < MAX_PROJECTS:
                out.outside.append(path)
    if roots:
        roots = _outside_checkpoints(roots)   # (read only when there is one to check)
    out.roots, out.left_out = roots[:MAX_PROJECTS], max(0, len(roots) - MAX_PROJECTS)
    return out


def _outside_checkpoints(roots: list[str]) -> list[str]:
    """`roots` less those in the Hermes home (the store, the default mount) or inside a
    rewindfs mount: what is there is a checkpoint, not a project."""
    from rewindfs.store.objects import mounts

    fences = [os.fsencode(os.path.realpath(hooklog.hermes_home())), *mounts.rewindfs_mounts()]
    return [r for r in roots if mounts.inside(os.fsencode(r), fences) is None]


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
