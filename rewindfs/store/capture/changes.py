"""Finding what changed since the last capture, retried when the tree changes under it.

The walk run over the whole tree or named paths; nothing is written yet.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pygit2
import pygit2.utils  # StrArray: a pygit2 internal (store.objects.gitextra checks it)
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

from rewindfs.errors import Refused, StoreError
from rewindfs.store.capture import deepdirs, fileread, interrupts
from rewindfs.store.capture.walk import Limits, TooManyFiles, Walk, blocking_parent, is_real_dir
from rewindfs.store.objects import gitextra
from rewindfs.store.objects.repo import Project

ATTEMPTS = 3  # a walk that failed on a changing tree is tried again (see capture)


# libgit2's GIT_INDEX_ADD_DISABLE_PATHSPEC_MATCH: paths are literal (no globbing), and
# a directory still matches everything below it.
LITERAL_PATHS = 1 << 1


def find(project: Project, index: pygit2.Index, limits: Limits, paths: list[bytes] | None,
          rules: list[bytes], hidden: list[bytes], listed: set[bytes],
          reset: Callable[[], None] | None = None, outside: int = 0) -> Walk:
    """Find what changed; nothing is written yet. `reset` puts `index` back as it was
    (default: read again from its file); `outside`: files the tree holds beyond what
    `index` holds (a watch's capture walks a small index: graft)."""
    if reset is None:
        def reset() -> None:
            index.read(True)
    files, dirs = _split_paths(project, paths)
    for attempt in range(ATTEMPTS):
        if attempt:
            reset()  # undo what the failed attempt staged
        walk = Walk(project, index, limits, outside)
        try:
            for rel in hidden:  # captured before this rule existed: not project content
                walk.dirty |= _remove_below(index, rel)
            if attempt:
                # The last attempt failed on a file libgit2 hashed (a tracked file
                # whose stat changed but not its size) that changed or vanished under
                # it. Make such files plainly modified, so the walk hands them to us
                # unhashed: first the ones changed by now, on a last try every file.
                _mark_modified(walk, everything=attempt + 1 == ATTEMPTS)
            if listed and _mark_modified(walk, oids=listed):
                walk.force_pack = True  # packed objects are found before loose ones
                walk.damaged = listed
            for rel in files:
                walk.stage_one(rel)
            if paths is None or dirs:
                _find_changes(walk, dirs)
            for rel in walk.nested:
                walk.add_nested(rel)
            return walk
        except TooManyFiles:
            reset()  # drop the partial staging
            raise too_many(project, limits) from None
        except interrupts.Interrupted:
            reset()
            raise
        except (OSError, pygit2.GitError) as exc:
            if attempt + 1 < ATTEMPTS and "nesting too deep" in str(exc):
                # Leave the too-deep directories out (and say so), capture the rest.
                new_rules = deepdirs.remember(
                    project.store.layout.worktree_admin(project.h16),
                    deepdirs.find(walk.root, walk.ignored))
                gitextra.add_ignore_rules(project.repo, [r for r in new_rules if r not in rules])
                rules = new_rules
                continue
            if attempt + 1 < ATTEMPTS and _looks_transient(exc):
                continue
            reset()
            raise StoreError(f"could not capture {project.workdir}: {exc}") from exc
    raise AssertionError("unreachable")


def check_count(project: Project, walk: Walk, limits: Limits, dropping: list[bytes]) -> None:
    """Refuse a capture that would leave more than max_files files (`dropping`: entries
    dropped after the walk as now ignored): nothing is written, the index as it was."""
    if limits.max_files and walk.files(dropping) > limits.max_files:
        walk.index.read(True)
        raise too_many(project, limits)


def too_many(project: Project, limits: Limits) -> Refused:
    return Refused(f"{project.workdir} has more than {limits.max_files} files "
                   "(raise max_files or add ignore rules)")


def _remove_below(index: pygit2.Index, rel: bytes) -> bool:
    before = C.git_index_entrycount(index._index)
    C.git_index_remove_directory(index._index, rel, 0)
    return C.git_index_entrycount(index._index) != before


def _find_changes(walk: Walk, dirs: list[bytes]) -> None:
    """Every path (under `dirs`, or everywhere) that is new, changed or deleted since
    the index, as `git add -A` would see it, handed to the walk."""
    if not gitextra.AVAILABLE:  # pragma: no cover - see gitextra
        _add_all(walk, [os.fsdecode(d) for d in dirs])
        return
    with gitextra.index_to_workdir(walk.repo, walk.index, dirs) as deltas:
        for delta in deltas:
            interrupts.check()
            walk.look_at(ffi.string(delta.old_file.path),
                         bool(delta.new_file.flags & gitextra.FLAG_EXISTS))


def _add_all(walk: Walk, pathspecs: list[str]) -> None:
    """The same through libgit2's add_all (which also builds a patch of every change)."""
    callback = ffi.callback("git_index_matched_path_cb", walk.on_path)
    with pygit2.utils.StrArray(pathspecs) as spec:
        flags = LITERAL_PATHS if pathspecs else 0
        err = C.git_index_add_all(walk.index._index, spec.ptr, flags, callback, ffi.NULL)
    if walk.error is not None:
        raise walk.error
    check_error(err, io=True)


def unreadable_dirs(walk: Walk, known: set[bytes]) -> list[bytes]:
    """Directories (not ignored) this process may not list: libgit2's walk passes
    them over in silence. `known` are the directories holding captured files, which
    are readable and not ignored; only the others need an ignore lookup."""
    out: list[bytes] = []
    stack: list[bytes] = [b""]
    while stack:
        rel = stack.pop()
        interrupts.check()
        for child, path in deepdirs.child_dirs(walk.root, rel):
            if child in known:
                stack.append(child)
            elif not walk.ignored(child + b"/"):
                if os.access(path, os.R_OK | os.X_OK):
                    stack.append(child)  # empty, or only ignored or unreadable below
                else:
                    out.append(child + b"/")
    return sorted(out)


def _mark_modified(walk: Walk, *, everything: bool = False,
                   oids: set[bytes] | None = None) -> int:
    """Give tracked entries (those whose stat no longer matches, all, or those holding
    `oids`) a size their file does not have: libgit2 then calls them modified without
    hashing them, and they are read like new files. An entry whose file keeps
    changing stays marked (and keeps its content), so the next checkpoint reads it
    again. Returns how many were marked."""
    idx = walk.index._index
    marked = 0
    for i in range(C.git_index_entrycount(idx)):
        e = C.git_index_get_byindex(idx, i)
        if oids is not None:
            if ffi.buffer(e.id.id, 20)[:] in oids:
                e.file_size = _unlike(e.file_size, e.file_size)
                marked += 1
            continue
        try:
            st = os.lstat(walk.root + b"/" + ffi.string(e.path))
        except OSError:
            if everything:  # gone now, maybe back (at its old size) when the walk looks
                e.file_size = _unlike(e.file_size, e.file_size)
            continue
        size = st.st_size & 0xFFFFFFFF
        if everything or (e.file_size != size
                          or e.mtime.seconds != fileread.int32(st.st_mtime_ns // 1_000_000_000)
                          or e.mtime.nanoseconds != st.st_mtime_ns % 1_000_000_000
                          or e.ino != st.st_ino & 0xFFFFFFFF):
            e.file_size = _unlike(size, e.file_size)
            marked += 1
    walk.dirty |= marked > 0
    return marked


def _unlike(a: int, b: int) -> int:
    """A 32-bit size other than `a` and `b`, and never 0 (an entry of size 0 is
    "unknown", which libgit2 hashes to settle)."""
    size = max(a, b) + 1
    return size if size <= 0xFFFFFFFF else 1 if 1 not in (a, b) else 2


def _split_paths(project: Project, paths: list[bytes] | None) -> tuple[list[bytes], list[bytes]]:
    """(files, directories) among `paths`; add_all walks the whole tree even for one
    file, so single files are staged directly."""
    files, dirs = [], []
    root = os.fsencode(str(project.workdir))
    for rel in paths or []:
        real_dir = is_real_dir(root + b"/" + rel) and blocking_parent(root, rel) is None
        (dirs if real_dir else files).append(rel)
    return files, dirs


_TRANSIENT = ("not found", "no such file", "could not find", "changed before",
              "failed to read", "error reading", "could not read", "read error", "short read")


def _looks_transient(exc: BaseException) -> bool:
    """A file deleted, replaced or rewritten between the walk and its hashing."""
    text = str(exc).lower()
    return isinstance(exc, FileNotFoundError) or any(t in text for t in _TRANSIENT)
