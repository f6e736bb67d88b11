"""Which project a path belongs to."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from rewindfs.store.objects import normalize_workdir

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
    target = normalize_workdir(path)
    start = target if target.is_dir() else target.parent
    home = normalize_workdir(Path.home())
    candidates = []
    for folder in (start, *start.parents):
        if folder == home or folder in home.parents or folder == Path(folder.anchor):
            break
        candidates.append(folder)
    for folder in candidates:
        if folder in registered:
            return folder
    for folder in candidates:
        if any((folder / marker).exists() for marker in PROJECT_MARKERS) \
                and _own_folder(folder):
            return folder
    return start


def _own_folder(folder: Path) -> bool:
    """Owned by this user and writable by no other (what a marker there is trusted for)."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o002


def working_dir_for_path(layout: Layout, path: str | Path) -> Path:
    """`project_root` of `path`, the projects the store knows counting as registered."""
    registered = set()
    if (layout.store / "HEAD").exists():
        from rewindfs.store.history import projects

        registered = {r.workdir for r in projects.list_records(layout)}
    return project_root(path, registered)
