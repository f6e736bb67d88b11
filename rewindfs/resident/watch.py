"""The resident process's watch: which paths of each project changed since a capture it trusts.

Each project the resident process checkpoints gets an inotify watch on every directory
(watchdog's InotifyFD: one inotify instance, one reader thread, a callback per project;
watchdog because it is maintained and has the same on macOS, FSEvents, so the design
carries there). An event names an entry in a watched directory: that path is noted as
changed, with the event's sequence number. A directory created or moved in is watched in
turn (and, as a changed path, walked whole by the next capture); one moved out stops
being watched.

What the watch answers (`plan`): the paths changed since the newest capture it trusts
(`Base`: its tree, file count, limits, what it left out, and the sequence number at which
it began), for the capture to graft onto that tree (store.capture.graft). A capture it
trusts is one that began after every directory was watched and reported back
(`captured`). Before answering, `sync` makes sure every event of what already happened
has been seen: it creates a file in a directory of its own, watched through the same
inotify instance, whose events arrive in order, and waits for that file's event (the
"cookie" of watchman and git's fsmonitor, kept out of the project).

Whenever the watch cannot be trusted, the capture walks: a project not yet watched whole
(`starting`), or `lost`: the kernel's event queue overflowed, the watch limit was
reached, the project directory moved or was removed, a directory inside it is another
filesystem, the project lies on a filesystem that sends no events for changes made
elsewhere (network, FUSE), or more than MAX_CHANGED paths changed. A lost project is
watched again from scratch the next time it is asked about. Writes through a shared
memory mapping send no events (as for every inotify user): a program that changes files
only that way is not seen until it touches them otherwise.
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watchdog.observers.inotify_c import InotifyConstants as K
from watchdog.observers.inotify_c import InotifyEvent, InotifyFD

from rewindfs.resident import filesystems

MASK = (K.IN_CREATE | K.IN_DELETE | K.IN_MODIFY | K.IN_ATTRIB | K.IN_CLOSE_WRITE
        | K.IN_MOVED_FROM | K.IN_MOVED_TO | K.IN_DELETE_SELF | K.IN_MOVE_SELF
        | K.IN_ONLYDIR | K.IN_DONT_FOLLOW | K.IN_EXCL_UNLINK)
CODE_MASK = (K.IN_CREATE | K.IN_DELETE | K.IN_MODIFY | K.IN_ATTRIB | K.IN_MOVED_FROM
             | K.IN_MOVED_TO | K.IN_DELETE_SELF | K.IN_MOVE_SELF | K.IN_ONLYDIR)
MAX_CHANGED = 100_000
SYNC_SECONDS = 2.0
SKIPPED = (b".git",)   # never captured (store.objects.ignore.ALWAYS_EXCLUDED)
STARTING, READY, LOST = "starting", "ready", "lost"


@dataclass(frozen=True)
class Base:
    tree: bytes
    count: int
    limits: tuple[int, int]
    skipped: dict[str, list[str]]
    seq: int
    gen: int


@dataclass
class Project:
    root: bytes
    gen: int      # one more each time it is watched again from scratch
    cid: int      # its callbacks' id in the inotify instance (one per watch of it)
    state: str = STARTING
    why: str = "the watch is being set up"
    dirs: dict[int, bytes] = field(default_factory=dict)   # watch descriptor -> relative dir
    changed: dict[bytes, int] = field(default_factory=dict)  # relative path -> event seq
    base: Base | None = None
    grafts: int = 0   # captures answered from the watch
    walks: int = 0    # captures that walked, the watch not trusted then


class Watcher:
    """Every project's watch, one inotify instance (its reader thread calls back here)."""

    def __init__(self, cookies: Path, hidden: tuple[bytes, ...] = ()):
        self.lock = threading.RLock()
        self.seq = 0
        self.projects: dict[bytes, Project] = {}
        self.hidden = hidden   # absolute directories never watched (the store)
        self.fd = InotifyFD()
        self.fd.start()
        self._ids = itertools.count(1)
        self.cookies = os.fsencode(cookies)
        self._waiting: dict[bytes, threading.Event] = {}
        self._cookie_id = next(self._ids)
        self._code_id = next(self._ids)
        self.code_changed = None
        self.fd.add_callback(self.cookies, K.IN_CREATE | K.IN_ONLYDIR, _Cookies(self),
                             self._cookie_id)

    def close(self) -> None:
        self.fd.stop()

    # -- this process's own code -----------------------------------------------------------

    def watch_code(self, dirs: dict[bytes, set[bytes]]) -> None:
        """Note when any of these files (names by directory) changes on disk: this
        process's loaded code (resident.loaded), which must never serve stale."""
        self.code_changed: str | None = None
        callback = _Code(self, dirs)
        for folder in dirs:
            try:
                wd = self.fd.add_callback(folder, CODE_MASK, callback, self._code_id)
                callback.wds[wd] = folder
            except OSError:
                self.code_changed = f"{os.fsdecode(folder)} (not watchable)"

    def code_seen(self) -> bool:
        """Whether any loaded file changed, every event until now seen first."""
        if not self.sync():
            return True   # cannot tell: as if it changed
        return self.code_changed is not None

    # -- what the captures ask -------------------------------------------------------------

    def plan(self, root: bytes, limits: tuple[int, int]) -> tuple[Base | None,
                                                                    list[bytes], Any]:
        """(the base, the paths changed since it, a token for `captured`), after `sync`.
        (None, [], None): walk, and take nothing from it; (None, [], token): walk, and
        report the capture, the next base."""
        if not self.sync():
            return None, [], None
        with self.lock:
            project = self.projects.get(root)
            if project is None or project.state == LOST:
                self._start(root, project)
                return None, [], None
            if project.state != READY:
                project.walks += 1
                return None, [], None
            token = (project.gen, self.seq)
            base = project.base
            if base is None or base.gen != project.gen or base.limits != limits:
                project.walks += 1
                return None, [], token
            project.grafts += 1
            return base, [p for p, seq in project.changed.items() if seq > base.seq], token

    def captured(self, root: bytes, token: Any, tree: bytes, count: int,
                 skipped: dict[str, list[str]], limits: tuple[int, int]) -> None:
        """A capture that began at `token` gave `tree`: the next base, unless a newer one
        (or a loss of the watch) came first."""
        gen, seq = token
        with self.lock:
            project = self.projects.get(root)
            if project is None or project.gen != gen or project.state != READY:
                return
            if project.base is not None and project.base.gen == gen and project.base.seq >= seq:
                return
            project.base = Base(tree, count, limits, skipped, seq, gen)
            project.changed = {p: s for p, s in project.changed.items() if s > seq}

    def sync(self) -> bool:
        """Whether every event of what happened before this call has been handled
        (False: the reader did not get there within SYNC_SECONDS)."""
        name = b"%d-%d" % (os.getpid(), next(self._ids))
        seen = threading.Event()
        with self.lock:
            self._waiting[name] = seen
        path = self.cookies + b"/" + name
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
            return seen.wait(SYNC_SECONDS)
        except OSError:
            return False
        finally:
            with self.lock:
                self._waiting.pop(name, None)
            try:
                os.unlink(path)
            except OSError:
                pass

    def status(self) -> list[dict[str, Any]]:
        with self.lock:
            return [{"root": os.fsdecode(p.root), "state": p.state, "why": p.why,
                     "dirs": len(p.dirs), "changed": len(p.changed), "grafts": p.grafts,
                     "walks": p.walks, "base": p.base is not None}
                    for p in self.projects.values()]

    # -- watching --------------------------------------------------------------------------

    def _start(self, root: bytes, old: Project | None) -> None:
        if old is not None:
            self._unwatch(old, list(old.dirs))
        project = Project(root, gen=(old.gen + 1) if old is not None else 1,
                          cid=next(self._ids))
        self.projects[root] = project
        threading.Thread(target=self._establish, args=(project,), daemon=True,
                         name="rewind-watch").start()

    def _establish(self, project: Project) -> None:
        why = filesystems.unwatchable(project.root)
        if why is None:
            try:
                self._add_tree(project, b"")
            except _Lost as exc:
                why = str(exc)
        with self.lock:
            if project.state != STARTING:
                return   # lost meanwhile
            if why is not None:
                self._lose(project, why)
            else:
                project.state, project.why = READY, "watched"

    def _add_tree(self, project: Project, rel: bytes) -> None:
        """Watch the directory `rel` and every directory below it."""
        root_dev = None
        pending = [rel]
        while pending:
            rel = pending.pop()
            path = project.root + b"/" + rel if rel else project.root
            if path in self.hidden:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)   # a watch added twice
                    wd = self.fd.add_callback(path, MASK, _Events(self, project), project.cid)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    limit = filesystems.watch_limit()
                    raise _Lost(f"the watch limit was reached ({limit} directories watched "
                                "by this user: fs.inotify.max_user_watches)") from None
                if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    continue   # gone meanwhile: its parent's event says so
                raise _Lost(f"{os.fsdecode(rel) or '.'} could not be watched: "
                            f"{exc.strerror}") from None
            if wd < 0:
                continue   # not readable: the capture cannot read it either, and says so
            with self.lock:
                project.dirs[wd] = rel
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for entry in entries:
                if entry.name in SKIPPED or not entry.is_dir(follow_symlinks=False):
                    continue
                child = rel + b"/" + entry.name if rel else entry.name
                try:
                    dev = entry.stat(follow_symlinks=False).st_dev
                    root_dev = root_dev if root_dev is not None else os.lstat(project.root).st_dev
                except OSError:
                    continue
                if dev != root_dev and project.root + b"/" + child not in self.hidden:
                    raise _Lost(f"{os.fsdecode(child)} is another filesystem")
                pending.append(child)

    def _unwatch(self, project: Project, wds: list[int]) -> None:
        for wd in wds:
            project.dirs.pop(wd, None)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # a watch gone already
                self.fd.remove_callbacks([(wd, project.cid) for wd in wds])
        except (OSError, KeyError):
            pass

    def _lose(self, project: Project, why: str) -> None:
        project.state, project.why = LOST, why
        project.changed.clear()
        project.base = None
        self._unwatch(project, list(project.dirs))

    # -- events (the reader thread) --------------------------------------------------------

    def on_event(self, project: Project, event: InotifyEvent) -> None:
        with self.lock:
            if project.state == LOST or self.projects.get(project.root) is not project:
                return
            rel = project.dirs.get(event.wd)
            if rel is None:
                return
            if not event.name:   # the directory itself
                if rel == b"" and (event.is_delete_self or event.is_move_self):
                    self._lose(project, "the project directory was moved or removed")
                elif event.is_attrib:
                    self._note(project, rel)
                return
            if event.name in SKIPPED:
                return
            path = rel + b"/" + event.name if rel else event.name
            self._note(project, path)
            if event.is_directory and event.is_moved_from:
                inside = path + b"/"
                self._unwatch(project, [wd for wd, d in project.dirs.items()
                                        if d == path or d.startswith(inside)])
        if event.is_directory and (event.is_create or event.is_moved_to or event.is_attrib):
            try:
                self._add_tree(project, path)
            except _Lost as exc:
                with self.lock:
                    self._lose(project, str(exc))

    def _note(self, project: Project, path: bytes) -> None:
        self.seq += 1
        project.changed[path] = self.seq
        if len(project.changed) > MAX_CHANGED:
            self._lose(project, f"more than {MAX_CHANGED:,} paths changed")

    def on_watch_deleted(self, project: Project, wd: int) -> None:
        with self.lock:
            project.dirs.pop(wd, None)

    def on_queue_overflow(self) -> None:
        with self.lock:
            for project in self.projects.values():
                if project.state != LOST:
                    self._lose(project, "events were lost (the kernel's queue overflowed)")

    def on_cookie(self, name: bytes) -> None:
        with self.lock:
            seen = self._waiting.get(name)
        if seen is not None:
            seen.set()


class _Lost(Exception):
    pass


class _Events:
    """watchdog's WatchCallback for one project."""

    def __init__(self, watcher: Watcher, project: Project):
        self.watcher, self.project = watcher, project

    def on_event(self, event: InotifyEvent) -> None:
        self.watcher.on_event(self.project, event)

    def on_watch_deleted(self, wd: int) -> None:
        self.watcher.on_watch_deleted(self.project, wd)

    def on_queue_overflow(self) -> None:
        self.watcher.on_queue_overflow()


class _Code:
    """watchdog's WatchCallback for the directories of this process's loaded files."""

    def __init__(self, watcher: Watcher, dirs: dict[bytes, set[bytes]]):
        self.watcher = watcher
        self.dirs = dirs
        self.wds: dict[int, bytes] = {}

    def on_event(self, event: InotifyEvent) -> None:
        folder = self.wds.get(event.wd, b"")
        if event.is_delete_self or event.is_move_self:
            self.watcher.code_changed = os.fsdecode(folder)
        elif event.name in self.dirs.get(folder, ()):
            self.watcher.code_changed = os.fsdecode(folder + b"/" + event.name)

    def on_watch_deleted(self, wd: int) -> None:
        self.watcher.code_changed = "a watched directory"

    def on_queue_overflow(self) -> None:
        self.watcher.code_changed = "events were lost"


class _Cookies:
    def __init__(self, watcher: Watcher):
        self.watcher = watcher

    def on_event(self, event: InotifyEvent) -> None:
        if event.is_create:
            self.watcher.on_cookie(event.name)

    def on_watch_deleted(self, wd: int) -> None:
        pass

    def on_queue_overflow(self) -> None:
        self.watcher.on_queue_overflow()
