"""Where history stops: the store's `shallow` file, git's own prune boundary.

libgit2 reads `shallow` once per repository handle, so long-lived readers (the
mount, an agent harness) would not notice a moved boundary; readers here take
the boundary from the file themselves (`boundaries`), cached by its stat.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2

from rewindfs.store.objects.durable import fsync_dir, write_all
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock, remove_stale_lock

_cache: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}
STALE_GIT_LOCK = 2.0  # seconds; git holds shallow.lock for milliseconds


def common_dir(repo: pygit2.Repository) -> Path:
    """The store's directory, for the bare store or a project worktree handle."""
    path = Path(repo.path)
    common = path / "commondir"
    if common.exists():
        path = (path / common.read_text().strip()).resolve()
    return path


def shallow_file(repo: pygit2.Repository) -> Path:
    """The store's `shallow` file, for the bare store or a project worktree handle."""
    return common_dir(repo) / "shallow"


def boundaries(repo: pygit2.Repository) -> frozenset[str]:
    """Commits at which history stops (their parents are pruned, or about to be)."""
    path = shallow_file(repo)
    try:
        st = path.stat()
    except FileNotFoundError:
        return frozenset()
    key = (st.st_mtime_ns, st.st_size)
    cached = _cache.get(str(path))
    if cached and cached[0] == key:
        return cached[1]
    found = frozenset(line.strip() for line in path.read_text().splitlines() if line.strip())
    _cache[str(path)] = (key, found)
    return found


def add_boundaries(repo: pygit2.Repository, layout: Layout, commits: set[str]) -> None:
    """Add commits to `shallow` (store-wide lock; atomic rename, as git writes it).

    `git prune` (run by maintenance, or by Hermes's gc) rewrites `shallow` too,
    dropping entries for commits it deleted. It does so under git's own
    `shallow.lock` and gives up if the file changed since it read it, so taking
    that lock file here as well means neither writer can lose the other's update.
    """
    with file_lock(layout.lock_file("shallow")):
        path = shallow_file(repo)
        with _GitLockfile(path) as lock:
            current = _read_boundaries(path)
            if not commits <= current:
                lock.commit("".join(f"{c}\n" for c in sorted(current | commits)))


def _read_boundaries(path: Path) -> set[str]:
    """The file as it is now (not the stat-keyed cache: git may have just rewritten it)."""
    try:
        return {line.strip() for line in path.read_text().splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


class _GitLockfile:
    """git's lock protocol for `path`: create `<path>.lock` exclusively, write it, rename it.

    git holds such a lock for the moment it takes to write a few lines, so waiting
    is short; one older than STALE_GIT_LOCK seconds belongs to a killed process.
    """

    def __init__(self, path: Path):
        self.path = path
        self.lock = path.with_name(path.name + ".lock")
        self.fd = -1

    def __enter__(self) -> _GitLockfile:
        deadline = time.monotonic() + STALE_GIT_LOCK
        while True:
            try:
                self.fd = os.open(self.lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                                  0o666)
                return self
            except FileExistsError:
                if time.monotonic() >= deadline:
                    remove_stale_lock(self.lock, STALE_GIT_LOCK)
                    deadline = time.monotonic() + STALE_GIT_LOCK
                time.sleep(0.002)

    def commit(self, text: str) -> None:
        """Durably: a boundary lost to a power cut after gc deleted what is older would
        leave history pointing at objects that are gone."""
        try:
            write_all(self.fd, text.encode())
            os.fsync(self.fd)
        finally:
            fd, self.fd = self.fd, -1  # forgotten first: __exit__ must not close it again
            os.close(fd)
        try:
            os.replace(self.lock, self.path)
        except OSError:
            self.lock.unlink(missing_ok=True)
            raise
        fsync_dir(self.path.parent)

    def __exit__(self, *exc: object) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:  # not committed: give the lock back
            os.close(fd)
            self.lock.unlink(missing_ok=True)
