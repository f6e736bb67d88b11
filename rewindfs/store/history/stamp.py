"""A checkpoint's stat stamp: "nothing changed since the newest checkpoint", decided from
file and directory metadata and the project's ref (read by libgit2), without reading a
single object.

After a checkpoint, `record` keeps the size, mtime, ctime, inode and mode of every file in
the project (ignored ones too: it knows no ignore rules, and needs none, since it only
claims that *nothing at all* changed) and the mtime and inode of every directory, in
``store/stamps/<h16>.json`` (0600), with the commit and tree it describes. `unchanged` says
the working tree still is that checkpoint when all of these hold:

- the project's ref still names that commit (as libgit2 reads it: the one reader);
- every file has the same metadata (an edit, a chmod, a replace or a delete shows in one);
- every directory has the same mtime (a file or directory created, removed or renamed in it
  moves it), so nothing new appeared anywhere;
- the capture settings are the same (the caller's `key`: size cap, excludes, ...);
- no ignore file inside the project (`.gitignore`, `.rewindignore`) changed: an edit
  there drops or brings back files whose own metadata did not move, so only a full
  capture can tell.

Only `.git` directories are left out (never captured). Recording may run after the
checkpoint's caller has moved on (the hooks do it in a detached child): whatever changes
from the capture's start on shows in ctime, so it leaves no stamp rather than a wrong one.

It errs one way only: any doubt (a file or directory touched around the time of the
checkpoint, whose metadata cannot tell a later write apart: git's "racily clean" problem,
made worse by the kernel's coarse file-time clock) leaves no stamp, and the caller takes
the checkpoint the ordinary way. Used by the agent hooks (rewindfs.hooks) so a destructive
command with nothing to protect costs no repository access, and fit for any other fast
"nothing to do" path.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from rewindfs.store.objects.private import ensure_dir, write_atomic

VERSION = 1
# A file whose mtime or ctime is this close to (or after) the start of the capture may have
# changed after the capture read it without its metadata showing it: no stamp then. Covers
# the kernel's coarse timestamp clock (one tick, at most 10 ms at HZ=100) with room to spare.
RACY_NS = 100_000_000
SKIPPED_DIRS = frozenset({b".git"})  # never captured (store.ignore.ALWAYS_EXCLUDED)
# Files whose edit changes what the capture takes of other paths (store.objects.ignore).
IGNORE_FILES = frozenset({b".gitignore", b".rewindignore"})


def path_of(store: Path, h16: str) -> Path:
    return store / "stamps" / f"{h16}.json"


def forget(store: Path, h16: str) -> None:
    try:
        os.unlink(path_of(store, h16))
    except FileNotFoundError:
        pass


def _file_meta(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode]


def _walk(root: bytes) -> Iterable[tuple[bytes, os.stat_result, bool]]:
    """(relative path, lstat, is a directory) of everything under `root`, itself first;
    symlinks are not followed."""
    pending = [b""]
    while pending:
        rel = pending.pop()
        path = os.path.join(root, rel) if rel else root
        yield rel, os.lstat(path), True
        with os.scandir(path) as it:
            for entry in it:
                name = os.path.join(rel, entry.name) if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        pending.append(name)
                else:
                    yield name, entry.stat(follow_symlinks=False), False


def record(store: Path, h16: str, workdir: Path, commit: str, tree: str, started_ns: int,
           key: str, skipped: dict[str, list[str]] | None = None,
           scoped_from: str | None = None) -> bool:
    """Write the stamp of checkpoint `commit` of `workdir`, whose capture started at
    `started_ns` (time.time_ns()). False (and no stamp) when in doubt. `skipped`: what
    that capture left out and said so (SnapshotResult.skipped_files), for a caller that
    reports it again when nothing changed (`since`). `scoped_from`: the capture took only
    the paths the stamp of that commit named as changed, so `skipped` speaks of those
    alone (see `_carried`)."""
    if scoped_from is not None:
        skipped = _carried(_load(store, h16), scoped_from, skipped)
    forget(store, h16)
    root = os.fsencode(workdir)
    limit = started_ns - RACY_NS
    files, dirs = {}, {}
    try:
        for rel, st, is_dir in _walk(root):
            if st.st_mtime_ns >= limit or st.st_ctime_ns >= limit:
                return False
            if is_dir:
                dirs[os.fsdecode(rel)] = [st.st_mtime_ns, st.st_ino]
            else:
                files[os.fsdecode(rel)] = _file_meta(st)
    except OSError:
        return False
    data = {"version": VERSION, "workdir": os.fsdecode(root), "commit": commit, "tree": tree,
            "key": key, "files": files, "dirs": dirs}
    if skipped is not None:
        data["skipped"] = {why: list(paths) for why, paths in skipped.items()}
    if tip(store, h16) != commit:
        return False  # a newer checkpoint, or the project (or store) removed meanwhile
    ensure_dir(path_of(store, h16).parent)
    # ensure_ascii keeps names that are not UTF-8 (surrogate escapes) representable.
    write_atomic(path_of(store, h16), json.dumps(data, separators=(",", ":")))
    return True


def _carried(old: dict | None, scoped_from: str, skipped: dict[str, list[str]] | None
             ) -> dict[str, list[str]] | None:
    """What a full capture would have left out, after a capture of the changed paths only
    (on top of `scoped_from`): nothing, when the stamp of `scoped_from` says its full
    capture left nothing out and the changed paths left nothing out either (the other
    paths did not change, so neither did what their capture leaves out); else unknown.
    Keys reported once per project (private_keys) are never reported again either way."""
    def quiet(found: object) -> bool:
        return isinstance(found, dict) and not [why for why in found if why != "private_keys"]

    if old is None or old.get("commit") != scoped_from:
        return None
    return {} if quiet(old.get("skipped")) and quiet(skipped or {}) else None


def tip(store: Path, h16: str) -> str | None:
    """The commit refs/hermes/<h16> names, as libgit2 reads it (the one reader of the
    store: loose ref, else the last of packed-refs' lines for it); None when there is
    none or it cannot be read."""
    import pygit2

    try:
        reference = pygit2.Repository(os.fspath(store)).references.get(f"refs/hermes/{h16}")
        return None if reference is None else str(reference.resolve().target)
    except (pygit2.GitError, KeyError, ValueError):
        return None


def record_later(store: Path, h16: str, workdir: Path, commit: str, tree: str,
                 started_ns: int, key: str, skipped: dict[str, list[str]] | None = None,
                 scoped_from: str | None = None) -> None:
    """`record`, in a detached child, so the caller (an agent's hook, `rewind checkpoint`)
    does not wait for the walk. Safe: every file is judged by its metadata against the
    time the capture started, so whatever changes meanwhile (the very command a hook runs
    next) leaves no stamp rather than a wrong one. The child holds none of the caller's
    pipes (an agent waits for those to close) and leaves its session."""
    import signal

    # A Ctrl-C landing in the fork would raise inside Python's at-fork handlers (printed
    # as an ignored exception, traceback and all): held until the fork is done, then
    # delivered to the caller as usual; the child, detached, does not take it.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        record(store, h16, workdir, commit, tree, started_ns, key, skipped, scoped_from)
    except BaseException:  # noqa: BLE001 - a child with no one to tell
        pass
    finally:
        os._exit(0)


def _load(store: Path, h16: str) -> dict | None:
    try:
        with open(path_of(store, h16), "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def changes(store: Path, h16: str, workdir: Path, key: str, most: int = 1000,
            data: dict | None = None) -> tuple[str, str, list[bytes]] | None:
    """(commit, tree, paths) for the newest checkpoint and what changed since it: files
    whose metadata moved or that are gone, new names in directories whose mtime moved, and
    directories that are gone (project-relative, for a capture of those paths only). None
    when that is not provable, or more than `most` paths changed: capture everything.
    `data`: the stamp, when the caller has read it already."""
    data = data if data is not None else _load(store, h16)
    if data is None:
        return None
    root = os.fsencode(workdir)
    found: list[bytes] = []
    try:
        if (data["version"] != VERSION or data["key"] != key
                or data["workdir"] != os.fsdecode(root)
                or tip(store, h16) != data["commit"]):
            return None
        files, dirs = data["files"], data["dirs"]
        # The hot loop of every quick answer (one lstat a file): names kept as the stamp's
        # str (surrogate escapes encode back to the same bytes), _file_meta inlined.
        prefix, lstat = os.fsdecode(os.path.join(root, b"")), os.lstat
        for rel, meta in files.items():
            try:
                st = lstat(prefix + rel)
            except (FileNotFoundError, NotADirectoryError):
                found.append(os.fsencode(rel))
                continue
            if [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode] != meta:
                found.append(os.fsencode(rel))
        for rel, (mtime, ino) in dirs.items():
            name = os.fsencode(rel)
            path = os.path.join(root, name) if name else root
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                found.append(name)
                continue
            if st.st_ino != ino or not stat.S_ISDIR(st.st_mode):
                found.append(name)
            elif st.st_mtime_ns != mtime:
                with os.scandir(path) as it:
                    for entry in it:
                        child = os.path.join(name, entry.name) if name else entry.name
                        text = os.fsdecode(child)
                        if (text not in files and text not in dirs
                                and entry.name not in SKIPPED_DIRS):
                            found.append(child)
            if len(found) > most:
                return None
    except (OSError, KeyError, TypeError, ValueError):
        return None
    if len(found) > most or any(os.path.basename(p) in IGNORE_FILES for p in found):
        return None
    return data["commit"], data["tree"], sorted(set(found))


def unchanged(store: Path, h16: str, workdir: Path, key: str) -> tuple[str, str] | None:
    """(commit, tree) of the newest checkpoint when the working tree provably still is it,
    else None (not provable: take the checkpoint the ordinary way)."""
    found = changes(store, h16, workdir, key, most=0)
    return (found[0], found[1]) if found is not None and not found[2] else None


def since(store: Path, h16: str, workdir: Path, key: str, most: int = 1000
          ) -> tuple[str, str, list[bytes], dict[str, list[str]]] | None:
    """(commit, tree, what changed since it, what its capture left out and said so) for
    the newest checkpoint, when the stamp proves what changed and knows what a full
    capture left out; else None."""
    data = _load(store, h16)
    skipped = data.get("skipped") if data is not None else None
    if not isinstance(skipped, dict) or not all(
            isinstance(paths, list) and all(isinstance(p, str) for p in paths)
            for paths in skipped.values()):
        return None
    found = changes(store, h16, workdir, key, most=most, data=data)
    return None if found is None else (*found, skipped)
