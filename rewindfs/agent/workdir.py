"""Which project a path belongs to."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rewindfs.store.objects import Layout

PROJECT_MARKERS = (
    ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod", "Makefile", "pom.xml",
    ".hg", "Gemfile",
)


def project_root(path: str | Path, registered: set[Path] | frozenset[Path] = frozenset()) -> Path:
    """The project directory for `path`.

    The nearest already-registered project root wins; otherwise the nearest
    directory holding a project marker; otherwise the path's own directory. The
    search never climbs to the home directory or above it; a path that is itself in
    $HOME or above it gets its own directory, which checkpointing refuses. A marker
    only counts in a directory of this user's that no one else can write into: a
    `package.json` someone planted in a shared parent (/tmp) never makes a scratch
    directory's checkpoints take in the whole parent, the planter's files included.
    """
    from rewindfs.store.objects import normalize_workdir  # (the hooks' scope does without)

    start, candidates = _candidates(normalize_workdir(path))
    for folder in candidates:
        if folder in registered:
            return folder
    return _nearest(candidates, PROJECT_MARKERS) or start


def marked_root(path: Path, markers: tuple[str, ...] = PROJECT_MARKERS) -> Path | None:
    """The nearest directory at or above `path` (absolute, symlinks resolved) holding one
    of `markers`, by the rules of `project_root`; None: `path` is in no project."""
    return _nearest(_candidates(path)[1], markers)


def git_top_level(path: Path) -> Path | None:
    """The work tree a git command run at `path` (absolute, symlinks resolved) works on:
    the nearest `.git` (a directory, or a worktree's file), by the rules of
    `project_root`; None outside one."""
    return marked_root(path, (".git",))


def hook_project(layout: Layout, path: str | Path) -> Path:
    """`working_dir_for_path`, for the agent hooks: a directory that is in no project
    (no marker above it, never checkpointed before) is refused in one line, as the home
    directory and `/` are, rather than checkpointed whole."""
    from rewindfs.store.objects import normalize_workdir

    registered = _registered(layout)
    start, candidates = _candidates(normalize_workdir(path))
    for folder in candidates:
        if folder in registered:
            return folder
    found = _nearest(candidates, PROJECT_MARKERS)
    if not candidates:
        return start   # the home directory or above: checkpointing refuses it (too broad)
    if found is None:
        from rewindfs.errors import Refused

        raise Refused(f"{start} is in no project (no {', '.join(PROJECT_MARKERS[:4])} ... "
                      "in it or above it): not checkpointed; `rewind checkpoint` there "
                      "once makes it one")
    return found


def _candidates(target: Path) -> tuple[Path, list[Path]]:
    """The directory of `target` (absolute, symlinks resolved), and it and its parents
    below the home directory."""
    start = target if target.is_dir() else target.parent
    home = Path.home().resolve()
    candidates = []
    for folder in (start, *start.parents):
        if folder == home or folder in home.parents or folder == Path(folder.anchor):
            break
        candidates.append(folder)
    return start, candidates


def _nearest(candidates: list[Path], markers: tuple[str, ...]) -> Path | None:
    for folder in candidates:
        if any((folder / marker).exists() for marker in markers) and _own_folder(folder):
            return folder
    return None


def _own_folder(folder: Path) -> bool:
    """Owned by this user and writable by no other (what a marker there is trusted for)."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o002


def working_dir_for_path(layout: Layout, path: str | Path) -> Path:
    """`project_root` of `path`, the projects the store knows counting as registered."""
    return project_root(path, _registered(layout))


def _registered(layout: Layout) -> set[Path]:
    if not (layout.store / "HEAD").exists():
        return set()
    from rewindfs.store.history import projects

    return {r.workdir for r in projects.list_records(layout)}
