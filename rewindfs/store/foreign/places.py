"""Where an agent keeps a project's snapshots, and which agent project a directory is.

Kilo Code and OpenCode keep one snapshot git dir per project worktree at
`<data>/snapshot/<project id>/<sha1 of the worktree path>` (older versions: the
`<data>/snapshot/<project id>` folder itself), driven with `--git-dir`/`--work-tree`
and with `core.worktree` in its config. A project id is cached in the project's
own git dir (`.git/kilo`, `.git/opencode`); older versions took the root commit.
Both are read here without running git and without writing anything.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

from rewindfs.store.foreign.objects import named_alternates


@dataclass(frozen=True)
class SnapshotDir:
    path: Path  # the git dir
    worktree: str | None  # core.worktree, as the agent recorded it

    @property
    def objects(self) -> Path:
        return self.path / "objects"

    def broken_alternates(self) -> list[Path]:
        """Alternates that name a folder no longer there (a moved or deleted project)."""
        return [p for p in named_alternates(self.objects) if not p.is_dir()]


def snapshot_dirs(project_root: Path) -> list[SnapshotDir]:
    """The snapshot git dirs under `<data>/snapshot/<project id>`: the folder itself in the
    older layout, else one per worktree (the one for `prefer` first, see `ordered`)."""
    out = []
    candidates = [project_root]
    try:
        candidates += sorted(p for p in project_root.iterdir() if p.is_dir())
    except OSError:
        return []
    for path in candidates:
        if (path / "HEAD").is_file() and (path / "objects").is_dir():
            out.append(SnapshotDir(path, _worktree(path)))
    return out


def worktree_key(worktree: str) -> str:
    """The name the agents give a worktree's snapshot dir (sha1 of its path)."""
    return hashlib.sha1(worktree.encode("utf-8", "surrogateescape")).hexdigest()


def ordered(dirs: list[SnapshotDir], worktree: str) -> list[SnapshotDir]:
    """`dirs` with the one recorded for `worktree` first."""
    key = worktree_key(worktree)
    return sorted(dirs, key=lambda d: (d.worktree != worktree and d.path.name != key,
                                       str(d.path)))


def _worktree(gitdir: Path) -> str | None:
    try:
        config = pygit2.Config(str(gitdir / "config"))
        value = config["core.worktree"]
    except (KeyError, OSError, pygit2.GitError, ValueError):
        return None
    return value if isinstance(value, str) else None


def common_git_dir(workdir: Path) -> Path | None:
    """The git dir holding `workdir`'s objects and the agents' id files (a linked
    worktree's `.git` file leads to its common dir), or None outside a repository."""
    dot = workdir / ".git"
    gitdir: Path | None = None
    if dot.is_dir():
        gitdir = dot
    elif dot.is_file():
        try:
            line = dot.read_text(encoding="utf-8").strip()
        except (OSError, ValueError):
            return None
        if line.startswith("gitdir:"):
            target = Path(line[len("gitdir:"):].strip())
            gitdir = target if target.is_absolute() else (workdir / target)
    if gitdir is None or not gitdir.is_dir():
        return None
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return gitdir.resolve()
    return (gitdir / common).resolve()


def project_ids(workdir: Path, id_file: str) -> list[str]:
    """The ids an agent may have given the project at `workdir`: the one it cached in the
    git dir, then the root commit it used before (the smallest id of the roots, as
    `git rev-list --max-parents=0 --all | sort | head -1`)."""
    gitdir = common_git_dir(workdir)
    if gitdir is None:
        return []
    out = []
    try:
        cached = (gitdir / id_file).read_text(encoding="utf-8").strip()
        if cached:
            out.append(cached)
    except (OSError, ValueError):
        pass
    root = _root_commit(gitdir)
    if root and root not in out:
        out.append(root)
    return out


def _root_commit(gitdir: Path) -> str | None:
    try:
        repo = pygit2.Repository(str(gitdir), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        walker = repo.walk(None)
        for ref in repo.references.iterator():
            try:
                walker.push(ref.peel(pygit2.Commit).id)
            except (pygit2.GitError, KeyError, ValueError):
                continue
        roots = sorted(str(c.id) for c in walker if not c.parent_ids)
    except (pygit2.GitError, KeyError, ValueError, OSError):
        return None
    return roots[0] if roots else None


def same_path(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)
