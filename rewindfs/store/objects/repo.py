"""Opening and initialising the shared store, and per-project repository handles.

The store is one bare git repository. Each project additionally gets a git
"worktree" administrative directory inside it (`worktrees/<h16>/`: `HEAD`,
`commondir`, `gitdir`, `locked`). Opening that directory with
libgit2 gives a repository whose index and workdir belong to that project alone,
so the index survives between checkpoints and acts as a stat cache, while objects
and refs stay shared. `locked` keeps `git worktree prune` (run by `git gc`) from
deleting the admin dir, and gc counts each admin dir's index as reachable, so
blobs staged but not yet committed survive a concurrent gc.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import ConfigLevel
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

from rewindfs.errors import NotFound, Refused, StoreError
from rewindfs.store.objects import (
    durable,
    gitextra,
    ignore,
    odbguard,
    private,
    readfilter,
)
from rewindfs.store.objects.layout import Layout, normalize_workdir, objects_dir, project_hash
from rewindfs.store.objects.locks import file_lock, remove_stale_lock
from rewindfs.store.objects.mounts import refuse_inside_mount

# Settings that make stored bytes equal the files' bytes and keep a user's global
# git config (signing, autocrlf, excludes, filters) out of the store.
STORE_CONFIG = {
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.filemode": "true",
    "core.symlinks": "true",
    "core.ignorecase": "false",
    "core.precomposeunicode": "false",
    "core.logallrefupdates": "false",
    "commit.gpgsign": "false",
    "tag.gpgsign": "false",
    "gc.auto": "0",
    "user.name": "rewindfs",
    "user.email": "rewindfs@local",
}
ATTRIBUTES = f"* -text -ident -filter -working-tree-encoding {readfilter.ATTRIBUTE}\n"
STALE_LOCK_SECONDS = 2.0  # git holds config/HEAD locks for milliseconds
TOO_DEEP_FILE = "too-deep"  # in a worktree admin dir: exclude patterns capture adds
# In a worktree admin dir: what leaves out a file git tracks (ignore.tracked_exclude_text)
TRACKED_EXCLUDE_FILE = "tracked-exclude"
SUBDIRS = ("projects", "indexes", "worktrees", "locks", "refs/hermes", "info")


@dataclass
class Project:
    """One working directory's view of the store."""

    store: Store
    h16: str
    workdir: Path
    repo: pygit2.Repository  # opened on the worktree admin dir: own index + workdir
    mutex: threading.Lock

    @property
    def ref(self) -> str:
        return Layout.project_ref(self.h16)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive lock for changing this project's index or ref (threads and processes).

        Once held, git-style lock files of this project's refs left by a killed writer
        are cleared (else every later checkpoint fails on `<ref>.lock exists`).
        """
        with file_lock(self.store.layout.lock_file(self.h16),
                       what=f"the project {self.workdir}"):
            self.clear_stale_ref_locks()
            yield

    def clear_stale_ref_locks(self) -> None:
        """Remove lock files of this project's refs older than STALE_LOCK_SECONDS.

        Not age 0: Hermes moves the same ref with git, which takes no flock of ours but
        holds the lock file only for milliseconds."""
        root = self.store.layout.store
        candidates = [root / f"{Layout.project_ref(self.h16)}.lock",
                      root / f"{Layout.notes_ref(self.h16)}.lock"]
        labels = root / Layout.label_ref(self.h16, "")
        if labels.is_dir():
            candidates.extend(labels.glob("**/*.lock"))
        for path in candidates:
            remove_stale_lock(path, STALE_LOCK_SECONDS)


class Store:
    def __init__(self, layout: Layout):
        self.layout = layout
        self._repo: pygit2.Repository | None = None
        self._projects: dict[str, Project] = {}
        self._guard = threading.Lock()
        self._ensured = False
        readfilter.register()

    # -- the shared repository -------------------------------------------------

    def exists(self) -> bool:
        return (self.layout.store / "HEAD").exists()

    @property
    def repo(self) -> pygit2.Repository:
        """The bare store repository (raises NotFound / StoreError)."""
        if self._repo is None:
            if not self.exists():
                raise NotFound(f"no checkpoint store at {self.layout.store}")
            self._repo = _open(self.layout.store)
        return self._repo

    def ensure(self) -> None:
        """Create the store if missing and make its settings ours (idempotent, race-safe)."""
        path = self.layout.store
        try:
            private.ensure_dir(path)  # HERMES_HOME and checkpoints/ too, when missing
            os.chmod(path, 0o700)
            with file_lock(self.layout.lock_file("store")):
                # We hold the store lock, so an old lock file is a killed writer's.
                # A HEAD.lock without HEAD is an init that died half way.
                head_age = STALE_LOCK_SECONDS if self.exists() else 0.0
                remove_stale_lock(path / "HEAD.lock", head_age)
                remove_stale_lock(path / "config.lock", STALE_LOCK_SECONDS)
                created = not self.exists()
                if created:
                    durable.enable_libgit2()
                    pygit2.init_repository(str(path), bare=True)
                for sub in SUBDIRS:
                    private.ensure_dir(path / sub)
                _apply_config(_open(path), path / "config.lock")
                exclude = path / "info" / "exclude"
                if not ignore.has_patterns(exclude):
                    # Missing, or only the comments git's init template writes.
                    ignore.write_if_changed(exclude, ignore.default_exclude_text())
                ignore.write_if_changed(path / "info" / "attributes", ATTRIBUTES)
                from rewindfs.store.objects import firstuse  # (store creation: rare)

                firstuse.on_store_ready(self.layout, created)  # v1 migration (maintenance)
        except OSError as exc:
            raise StoreError(f"cannot create checkpoint store at {path}: {exc.strerror}") from exc
        except pygit2.GitError as exc:
            raise StoreError(f"cannot set up checkpoint store at {path}: {exc}") from exc
        self._repo = None
        self._ensured = True

    # -- projects --------------------------------------------------------------

    def project(self, workdir: str | os.PathLike[str], *, create: bool = True) -> Project:
        """The handle of the project at `workdir` (its admin dir is created when missing)."""
        wd = normalize_workdir(workdir)
        h16 = project_hash(wd)
        with self._guard:
            admin = self.layout.worktree_admin(h16)
            exists = (admin / "HEAD").exists()
            if h16 in self._projects:
                if exists:
                    return self._projects[h16]
                # Removed under us (retention, `rewind clear`): start the project afresh.
                del self._projects[h16]
                self._ensured = False
            if not exists and not create:
                raise NotFound(f"no checkpoints for {wd}")
            if not self._ensured:
                self.ensure()  # once per handle: upgrades stores written by older versions
            if not exists:
                _write_admin_dir(admin, h16, wd)
            try:
                repo = _open(admin)
            except StoreError:
                # HEAD, commondir and gitdir only say where things are: damaged ones are
                # rewritten (the index, the project's stat cache, is kept).
                rewrite_admin_files(admin, h16, wd)
                repo = _open(admin)
            _use_project_excludes(repo, admin)
            project = Project(self, h16, wd, repo, threading.Lock())
            self._projects[h16] = project
            return project

    def refresh_excludes(self, project: Project, extra: tuple[str, ...] = ()) -> None:
        admin = self.layout.worktree_admin(project.h16)
        text = ignore.project_exclude_text(project.workdir, extra)
        try:  # directories nested deeper than libgit2 walks (written by capture)
            text += (admin / TOO_DEEP_FILE).read_text(encoding="utf-8",
                                                     errors="surrogateescape")
        except FileNotFoundError:
            pass
        ignore.write_if_changed(admin / "exclude", text)
        ignore.write_if_changed(admin / TRACKED_EXCLUDE_FILE,
                                ignore.tracked_exclude_text(project.workdir, extra))


def guard_workdir(workdir: str | os.PathLike[str], layout: Layout | None = None) -> Path:
    """Resolve `workdir` and refuse what must never be checkpointed: too broad a
    directory, anything inside a rewindfs mount, and (given the store's `layout`) the
    Hermes home or the checkpoint store itself."""
    wd = normalize_workdir(workdir)
    if not wd.exists():
        raise NotFound(f"working directory not found: {wd}")
    if not wd.is_dir():
        raise Refused(f"not a directory: {wd}")
    home = normalize_workdir(Path.home())
    if wd == Path("/") or wd == home or wd in home.parents:
        raise Refused(f"refusing to checkpoint {wd}: directory too broad")
    refuse_inside_mount(wd)
    if layout is not None:
        base = normalize_workdir(layout.base)
        if wd == base or base in wd.parents:
            raise Refused(f"refusing to checkpoint {wd}: it is inside the checkpoint store")
        if base.name == "checkpoints" and wd == base.parent:
            raise Refused(f"refusing to checkpoint {wd}: it is the Hermes home, which holds "
                          "the checkpoint store")
    return wd


def _open(path: Path) -> pygit2.Repository:
    """The repository at `path` (the store, or a project's admin dir inside it)."""
    durable.enable_libgit2()  # before the handle exists: libgit2 reads it when opening refs
    try:
        repo = pygit2.Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise StoreError(f"checkpoint store at {path} is unreadable or corrupt: {exc}") from exc
    gitextra.check_internals(repo)
    odbguard.install(repo, objects_dir(path))
    return repo


def _apply_config(repo: pygit2.Repository, lock: Path) -> None:
    config = repo.config
    for key, value in STORE_CONFIG.items():
        if _config_get(config, key) == value:
            continue
        try:
            config[key] = value
        except pygit2.GitError:
            # Only a store's first setup writes its config, under our store lock: a
            # config.lock now is a killed writer's. Clear it and try once more.
            remove_stale_lock(lock, 0.0)
            config[key] = value


def _config_get(config: pygit2.Config, key: str) -> str | None:
    try:
        return config[key]
    except KeyError:
        return None


def _write_admin_dir(admin: Path, h16: str, workdir: Path) -> None:
    """Create worktrees/<h16>/ atomically (a half-written admin dir is never visible)."""
    # Built outside worktrees/: git treats every directory there as a worktree, so one
    # left half-written by a killed process would make `git fsck` fail.
    unique = f"{os.getpid()}.{threading.get_ident()}"
    tmp = admin.parent.parent / "locks" / f".worktree-{h16}.{unique}.tmp"
    tmp.mkdir(parents=True, mode=0o700)
    # Durable before it is in place, and its name after (a power cut must not leave
    # an admin dir of empty files, which libgit2 cannot open).
    for name, data in _admin_files(admin, h16, workdir).items():
        private.write_bytes(tmp / name, data, sync=True)
    private.write_bytes(tmp / "exclude", b".git\n", sync=True)
    durable.fsync_dir(tmp)
    try:
        tmp.rename(admin)
        durable.fsync_dir(admin.parent)
    except OSError:
        if admin.is_dir() and not (admin / "HEAD").exists():
            # A directory without HEAD (from a killed creator): complete it, HEAD last,
            # since HEAD is what marks the admin dir as usable.
            for child in sorted(tmp.iterdir(), key=lambda c: c.name == "HEAD"):
                os.replace(child, admin / child.name)
        # Otherwise we lost a race with another creator: theirs is equivalent.
        for child in tmp.iterdir():
            child.unlink()
        tmp.rmdir()


def _admin_files(admin: Path, h16: str, workdir: Path) -> dict[str, bytes]:
    """What makes worktrees/<h16>/ a git worktree admin dir (all derived from the workdir)."""
    return {
        # HEAD names a branch that is never created: git fsck calls a worktree HEAD outside
        # refs/heads "strange", and nothing here reads HEAD (the project ref is used by name).
        "HEAD": f"ref: refs/heads/rewindfs-{h16}\n".encode(),
        "commondir": b"../..\n",
        # libgit2 takes the workdir as the parent of the path in `gitdir`; no `.git` file
        # is ever written into the user's directory.
        "gitdir": os.fsencode(str(workdir / ".git")) + b"\n",
        "locked": b"rewindfs: per-project index, do not prune\n",
        "rewind-config": b"[core]\n\texcludesFile = " + os.fsencode(str(admin / "exclude")) + b"\n",
    }


def rewrite_admin_files(admin: Path, h16: str, workdir: Path) -> None:
    """Rewrite the bookkeeping files of an existing admin dir (its index is kept)."""
    for name, data in _admin_files(admin, h16, workdir).items():
        private.write_atomic(admin / name, data.decode("utf-8", "surrogateescape"),
                             errors="surrogateescape")


def _use_project_excludes(repo: pygit2.Repository, admin: Path) -> None:
    """Add admin/rewind-config at the APP level of this handle's config (not written to the store).

    pygit2 does not expose adding a file to a repository's config, so call libgit2.
    """
    cfg = ffi.new("git_config **")
    check_error(C.git_repository_config(cfg, repo._repo))
    try:
        err = C.git_config_add_file_ondisk(
            cfg[0], os.fsencode(str(admin / "rewind-config")), int(ConfigLevel.APP), repo._repo, 1
        )
        check_error(err)
    finally:
        C.git_config_free(cfg[0])
