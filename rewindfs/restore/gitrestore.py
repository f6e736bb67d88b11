"""`rewind restore N --git`: the project's `.git` given back as checkpoint N recorded it.

When `.git` is gone it is recreated whole: the objects the recorded refs, stash and index
reach, every ref, HEAD, the index, the stash's reflog, config and the small files, hooks
with their modes. When it exists, its refs, HEAD, the index and the stash's reflog are set
back (refs N did not have are deleted, the ones it had come back) and the objects it
lacks are added; its config and hooks are left as they are. A recorded "no repository"
(the pre-rollback snapshot of a restore that recreated `.git`, which an undo restores)
removes `.git`. The bytes and git's formats are the store's (store.projectgit.prepare);
this module only puts them in place:

* through descriptors of the project, no link followed (restore.dirfds): a `.git` that
  is a symlink or a file, or a symlink planted inside it (`objects`, `refs`, ...), is
  refused before anything changes, so a crafted `.git` never chooses where a write goes;
* with git's own lock files (`index.lock`, `packed-refs.lock`, `HEAD.lock`; a file
  written under `<name>.lock` and renamed), so a git running meanwhile fails rather than
  mixing its writes with ours, and one that is running already makes the restore Busy;
* durably: the pack and its index fsynced and renamed (pack first), every file fsynced
  before its rename, each directory whose names changed fsynced after.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rewindfs import store as st
from rewindfs.errors import Busy, Refused
from rewindfs.restore.dirfds import DirFds, UnsafePath
from rewindfs.restore.fdtree import process_umask
from rewindfs.store import projectgit
from rewindfs.store.history import gitkeep
from rewindfs.store.objects import durable

GIT = b".git"
LOCKED = (b"index", b"packed-refs", b"HEAD")
MAX_DEPTH = 32  # of folders under refs/
COPY = 1 << 20


@dataclass
class GitOutcome:
    recreated: bool = False
    removed: bool = False  # no repository recorded: .git went
    refs: int = 0  # refs the repository has now
    changed: list[str] = field(default_factory=list)  # refs set back, created or deleted
    head: str = ""

    def lines(self) -> list[str]:
        if self.removed:
            return ["  repository: .git removed (there was none then; `rewind undo` brings "
                    "it back)"]
        what = "recreated" if self.recreated else "set back"
        moved = f", {len(self.changed)} changed ({', '.join(self.changed[:5])}" + \
            (" ..." if len(self.changed) > 5 else "") + ")" if self.changed else ""
        return [f"  repository {what}: {self.refs} refs{moved}; HEAD {self.head}; index and "
                "stash as recorded"]


def state_of(target: st.Checkpoint) -> str:
    """The state checkpoint `target` recorded (Refused when none: nothing changes)."""
    state = gitkeep.state_of(target.trailers)
    if state is None:
        raise Refused(f"checkpoint {target.short} recorded no repository state (it was "
                      "taken without --git, or before a command that could not change "
                      "the repository); nothing was changed")
    return state


def check(workdir: Path) -> None:
    """Refuse, before anything changes, a `.git` this restore must not write through: a
    link or a file, or one with a link (or file) where a folder it writes into belongs."""
    what = {"link": "a symbolic link", "file": "a file (a linked worktree's)",
            "other": "no directory"}.get(_kind(workdir))
    if what is None and _kind(workdir) == "dir":
        for rel in projectgit.SKELETON:
            path = workdir / ".git" / os.fsdecode(rel)
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    raise Refused(f"{path} is not a real directory: a restore never writes "
                                  "through it; nothing was changed")
            except FileNotFoundError:
                continue
    if what is not None:
        raise Refused(f"{workdir / '.git'} is {what}: a restore never writes through it; "
                      "nothing was changed")


def give_back(store: st.Store, workdir: Path, state: str) -> GitOutcome:
    """Put state `state` (a state commit, or gitkeep.NONE) into the project's `.git`."""
    check(workdir)
    root = os.fsencode(str(workdir))
    dirs = DirFds(root)
    try:
        if state == gitkeep.NONE:
            return _remove(dirs, workdir)
        recreate = _kind(workdir) == "missing"
        before = {} if recreate else _refs_now(workdir)
        giving = projectgit.prepare(store.repo, store.layout, state, workdir / ".git",
                                    recreate)
        try:
            _open_all(dirs)
            with _git_locks(dirs) as locks:
                _install(dirs, giving, locks)
        finally:
            giving.done()
        refs = giving.state.refs
        changed = sorted(n for n in set(refs) | set(before) if refs.get(n) != before.get(n))
        return GitOutcome(recreated=recreate, refs=len(refs),
                          changed=[_short(n) for n in changed] if not recreate else [],
                          head=projectgit.summary.head_text(giving.state.head))
    except UnsafePath as exc:
        raise Refused(f"{workdir / os.fsdecode(exc.filename or GIT)} is not a real "
                      "directory: a restore never writes through it") from None
    finally:
        dirs.close()


def _kind(workdir: Path) -> str:
    try:
        mode = os.lstat(workdir / ".git").st_mode
    except FileNotFoundError:
        return "missing"
    if stat.S_ISDIR(mode):
        return "dir"
    return "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "other"


def _refs_now(workdir: Path) -> dict[str, str]:
    try:
        return projectgit.summary.refs_now(workdir / ".git")
    except projectgit.Refusal:
        return {}


def _remove(dirs: DirFds, workdir: Path) -> GitOutcome:
    if _kind(workdir) != "dir":
        return GitOutcome()
    shutil.rmtree(GIT, dir_fd=dirs.root_fd)  # fd-based: never follows a link inside
    os.fsync(dirs.root_fd)
    return GitOutcome(removed=True)


def _open_all(dirs: DirFds) -> None:
    """Every directory written into, opened (made when missing) before anything is
    written: one that is a link is refused first."""
    umask = process_umask()
    for rel in (b"", *projectgit.SKELETON):
        path = GIT + (b"/" + rel if rel else b"")
        made = len(dirs.created)
        fd = dirs.open(path, create=True)
        if len(dirs.created) > made:
            os.fchmod(fd, 0o777 & ~umask)  # as git makes them (dirfds: 0700 first)


@contextmanager
def _git_locks(dirs: DirFds) -> Iterator[dict[bytes, int]]:
    """git's lock files of the index, packed-refs and HEAD, created (O_EXCL) before any
    write: a git running now makes this Busy; on failure ours are removed."""
    fd = dirs.open(GIT, create=False)
    held: dict[bytes, int] = {}
    try:
        for name in LOCKED:
            try:
                held[name] = os.open(name + b".lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                     | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
            except FileExistsError:
                raise Busy(f"a git command is running in this repository (.git/"
                           f"{name.decode()}.lock exists; remove it if none is)") from None
        yield held
    finally:
        for name, out in list(held.items()):
            os.close(out)
            try:
                os.unlink(name + b".lock", dir_fd=dirs.open(GIT, create=False))
            except FileNotFoundError:
                pass  # renamed into place


def _install(dirs: DirFds, giving: projectgit.Giving, locks: dict[bytes, int]) -> None:
    state = giving.state
    if giving.pack is not None:
        _copy_pack(dirs, giving.pack)
    _commit_lock(dirs, locks, b"packed-refs", giving.packed_refs)
    _drop_loose_refs(dirs, b".git/refs", set(giving.symbolic), 0)
    for name, data in sorted(giving.symbolic.items()):
        _write(dirs, GIT + b"/" + name, data, 0o644)
    if state.stash_log is not None:
        _write(dirs, b".git/logs/refs/stash", state.stash_log, 0o644)
    else:
        _unlink(dirs, b".git/logs/refs/stash")
    for name, (data, executable) in sorted(giving.files.items()):
        _write(dirs, GIT + b"/" + name, data, 0o755 if executable else 0o644)
    _commit_lock(dirs, locks, b"HEAD", giving.head)
    if state.index is not None:
        _commit_lock(dirs, locks, b"index", state.index)
    else:
        _unlink(dirs, b".git/index")
    for rel in sorted(dirs.dirty | {GIT}, key=lambda d: -d.count(b"/")):
        try:
            os.fsync(dirs.open(rel, create=False))
        except (FileNotFoundError, UnsafePath):
            pass


def _copy_pack(dirs: DirFds, pack: Path) -> None:
    """The pack, then its index, each copied under a temporary name, fsynced, renamed
    (git reads a pack only through its index)."""
    rel = b".git/objects/pack"
    for source in (pack, pack.with_suffix(".idx")):
        name = os.fsencode(source.name)
        fd = dirs.open(rel, create=True)
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
            continue  # the repository has this very pack already
        except FileNotFoundError:
            pass
        tmp = b"tmp_pack_rewind_" + secrets.token_hex(6).encode()
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                      | os.O_CLOEXEC, 0o444, dir_fd=fd)
        try:
            with open(source, "rb") as src:
                while chunk := src.read(COPY):
                    durable.write_all(out, chunk)
            os.fsync(out)
        except BaseException:
            os.close(out)
            os.unlink(tmp, dir_fd=fd)
            raise
        os.close(out)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        dirs.dirty.add(rel)


def _commit_lock(dirs: DirFds, locks: dict[bytes, int], name: bytes, data: bytes) -> None:
    out = locks.pop(name)
    try:
        durable.write_all(out, data)
        os.fchmod(out, 0o644 & ~process_umask())
        os.fsync(out)
    except BaseException:
        locks[name] = out  # removed by _git_locks
        raise
    os.close(out)
    fd = dirs.open(GIT, create=False)
    os.rename(name + b".lock", name, src_dir_fd=fd, dst_dir_fd=fd)
    dirs.dirty.add(GIT)


def _write(dirs: DirFds, rel: bytes, data: bytes, mode: int) -> None:
    """git's way: `<name>.lock` written (O_EXCL: a git writing it now makes this Busy),
    fsynced, renamed over `<name>`."""
    parent, _, name = rel.rpartition(b"/")
    fd = dirs.open(parent, create=True)
    umask = process_umask()
    try:
        out = os.open(name + b".lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                      | os.O_CLOEXEC, mode & ~umask, dir_fd=fd)
    except FileExistsError:
        raise Busy(f"a git command is running in this repository ({os.fsdecode(rel)}.lock "
                   "exists; remove it if none is)") from None
    try:
        durable.write_all(out, data)
        os.fchmod(out, mode & ~umask)
        os.fsync(out)
    except BaseException:
        os.close(out)
        os.unlink(name + b".lock", dir_fd=fd)
        raise
    os.close(out)
    os.rename(name + b".lock", name, src_dir_fd=fd, dst_dir_fd=fd)
    dirs.dirty.add(parent)


def _unlink(dirs: DirFds, rel: bytes) -> None:
    parent, _, name = rel.rpartition(b"/")
    try:
        os.unlink(name, dir_fd=dirs.open(parent, create=False))
        dirs.dirty.add(parent)
    except FileNotFoundError:
        pass


def _drop_loose_refs(dirs: DirFds, rel: bytes, keep: set[bytes], depth: int) -> None:
    """Every loose ref under `.git/refs` goes (packed-refs holds them all now), but the
    symbolic ones about to be written; a ref's lock file means a git is writing it."""
    if depth > MAX_DEPTH:
        return
    fd = dirs.open(rel, create=False)
    with os.scandir(fd) as entries:
        listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in listed:
        path = rel + b"/" + os.fsencode(name)
        if is_dir:
            _drop_loose_refs(dirs, path, keep, depth + 1)
        elif name.endswith(".lock"):
            raise Busy(f"a git command is running in this repository "
                       f"({os.fsdecode(path)} exists; remove it if none is)")
        elif path[len(b".git/"):] not in keep:
            os.unlink(os.fsencode(name), dir_fd=dirs.open(rel, create=False))
            dirs.dirty.add(rel)


def _short(name: str) -> str:
    return name[len("refs/heads/"):] if name.startswith("refs/heads/") else name[5:] \
        if name.startswith("refs/") else name
