"""One damaged file never takes a mount down (issue 27, "the mount dies on one damaged
notes ref"): every operation of the mount, on every damage kind of the damage catalog
(refs, labels, notes, objects, packs, the files beside them), in kernel-cache and stock
mode, answers: a result, or an errno (EIO for what is damaged, ENOENT for what is gone,
ENODATA for an attribute that is not there), never "Transport endpoint is not connected".

Each case mounts a damaged copy of a template store in the foreground and walks all of
it the way people and tools do: statfs, the root, each project (`ls -l`: lstat and the
xattrs ls asks for, readlink), each checkpoint's tree (lookup, getattr, readdir, open,
read, readlink, getxattr and listxattr on every node), then `ls -lR` and `ls -lL`
themselves. Afterwards the same mount must still serve: statfs, the root's own
attribute, and a healthy read (the other project's file, wherever libgit2 itself can
still read it in the damaged store).
Each failure is logged once.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections import Counter
from pathlib import Path

import pygit2
import pytest
from damages import (
    DAMAGES,
    OTHER_FILE,
    TIMEOUT,
    Template,
    prepare,
)

from rewindfs.fs import capabilities
from rewindfs.store import project_hash

MODES = {capabilities.KERNEL_CACHE: (), capabilities.STOCK: ("--no-kernel-cache",)}
# What an operation may answer on a damaged store besides a result (ENOTSUP: the kernel
# itself for a user.* attribute of a symlink).
ANSWERS = {errno.EIO, errno.ENOENT, errno.ENODATA, errno.ENOTSUP}
DEAD = {errno.ENOTCONN, errno.ECONNABORTED}
ASKED_BY_LS = ("security.selinux", "system.posix_acl_access", "system.posix_acl_default")


class Walk:
    """Every operation on every node reachable below the mountpoint, with what it answered."""

    def __init__(self, mnt: Path):
        self.mnt = mnt
        self.done: Counter[str] = Counter()
        self.wrong: list[str] = []

    def attempt(self, op: str, fn, *args, **kwargs):
        try:
            result = fn(*args, **kwargs)
        except OSError as exc:
            self.done[f"{op}: {errno.errorcode.get(exc.errno, exc.errno)}"] += 1
            if exc.errno not in ANSWERS:
                where = os.path.relpath(args[0], self.mnt) if args else ""
                self.wrong.append(f"{op} {where}: {exc}")
            return None
        self.done[f"{op}: ok"] += 1
        return result

    def node(self, path: Path, depth: int = 0) -> None:
        st = self.attempt("lstat", os.lstat, path)
        for name in ASKED_BY_LS:
            self.attempt("getxattr", os.getxattr, path, name, follow_symlinks=False)
        names = self.attempt("listxattr", os.listxattr, path, follow_symlinks=False) or []
        for name in names:
            self.attempt("getxattr", os.getxattr, path, name, follow_symlinks=False)
        if st is None:
            return
        if stat.S_ISLNK(st.st_mode):
            self.attempt("readlink", os.readlink, path)
            self.attempt("stat", os.stat, path)  # lookup through the link
        elif stat.S_ISDIR(st.st_mode):
            for child in self.attempt("readdir", os.listdir, path) or []:
                self.node(path / child, depth + 1)
        else:
            self.attempt("read", Path.read_bytes, path)

    def everything(self) -> None:
        self.attempt("statfs", os.statvfs, self.mnt)
        self.node(self.mnt)
        tops = [self.mnt / name for name in self.attempt("readdir", os.listdir, self.mnt) or []]
        # `ls -lR` of the mountpoint is `ls -l` of it and of every top, and `ls -lR` of
        # each top, in one process (a process for each was ~3 ms of CPU, 15 a case);
        # `ls -lL` follows the links of the root and of every top, all of them named.
        for args in (["ls", "-lR", str(self.mnt)], ["ls", "-lL", *map(str, [self.mnt, *tops])]):
            done = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
            if any(os.strerror(e) in done.stderr for e in DEAD):
                self.wrong.append(f"{' '.join(args[:2])}: {done.stderr.strip()}")


def readable_by_libgit2(store: Path, template: Template) -> bytes | None:
    """The other project's file as libgit2 reads it in the damaged store (None: it cannot,
    as with a store-wide damage such as an unparsable config or `shallow`)."""
    try:
        repo = pygit2.Repository(str(store))
        commit = repo.references[f"refs/hermes/{project_hash(template.other)}"].peel()
        return repo[commit.tree[OTHER_FILE[0]].id].data
    except (pygit2.GitError, KeyError, ValueError):
        return None


def logged_twice(log: str) -> list[str]:
    """Messages the mount logged more than once (the time stamp aside)."""
    messages = Counter(line.split(" ", 2)[-1] for line in log.splitlines()
                       if line[:4].isdigit())
    return [message for message, count in messages.items() if count > 1]


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_every_operation_answers_and_the_mount_keeps_serving(name, mode, damage_templates,
                                                              foreground, tmp_path):
    damage = DAMAGES[name]
    template = damage_templates[damage.packed]
    home, _ = prepare(template, tmp_path / "case", damage)
    store = home / "checkpoints" / "store"
    healthy = readable_by_libgit2(store, template)
    mounted = foreground(*MODES[mode], env={"HERMES_HOME": str(home)}, forked=True)
    walk = Walk(mounted.mnt)
    walk.everything()
    walk.everything()  # again: what the first pass cached, and nothing logged twice
    assert not walk.wrong, f"{name}, {mode}: {walk.wrong[:5]}\n{mounted.output()}"
    assert mounted.proc.poll() is None, f"the mount died: {mounted.output()}"
    # still serving: from memory, and a healthy read from the store in the same mount
    os.statvfs(mounted.mnt)
    assert os.getxattr(mounted.mnt, "user.rewind.mount-mode").startswith(mode.encode())
    if healthy is not None:
        assert (mounted.mnt / "other" / "1" / OTHER_FILE[0]).read_bytes() == healthy
    log = mounted.output()
    assert "Traceback" not in log, log
    assert not logged_twice(log), f"logged more than once: {logged_twice(log)}\n{log}"
    print(f"{name}, {mode}: {dict(walk.done)}")
    mounted.stop()
