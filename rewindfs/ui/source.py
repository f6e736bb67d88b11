"""What `rewind ui` shows of one project, read through the store alone (no textual here):
its checkpoints newest first, read from the tip as far as they are shown
(store.history.chain.page), what differs between a checkpoint and the working tree or
what its step changed, and one file's change or content (store.history.fileview).

Every read holds `lock`: the UI's worker threads take turns on the one repository.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rewindfs import store as st
from rewindfs.errors import NotFound, StoreError

if TYPE_CHECKING:
    from rewindfs.cli.app import App
    from rewindfs.cli.target import Target
    from rewindfs.store.history import Checkpoint

AGENT, SESSION, TURN, PHASE = "Rewind-Agent", "Rewind-Session", "Rewind-Turn", "Rewind-Phase"
FIRST_SCREEN = 60  # rows read before the first paint at most (a tall terminal's worth)
FRESH = 2.0  # seconds a capture of the working tree is used for before another


@dataclass
class Row:
    """A checkpoint as the timeline lists it."""

    cp: Checkpoint
    files: int = 0  # files changed against the previous checkpoint
    added: int = 0
    deleted: int = 0
    size: int | None = None  # a first checkpoint's size (everything in it is new)

    @property
    def agent(self) -> str:
        return self.cp.trailers.get(AGENT, "")

    @property
    def turn(self) -> str:
        return self.cp.trailers.get(TURN, "")

    @property
    def group(self) -> tuple[str, str, str]:
        """(agent, session, turn): rows of one agent turn share it; ("", "", "") none."""
        t = self.cp.trailers
        return (t.get(AGENT, ""), t.get(SESSION, ""), t.get(TURN, ""))


@dataclass
class Files:
    """The files of a checkpoint the files pane lists: against `new_tree` (the working
    tree, or the next checkpoint), from `old_tree`."""

    cp: Checkpoint
    step: bool  # what this checkpoint's step changed (else: since, to the working tree)
    old_tree: str | None
    new_tree: str
    changed: list = field(default_factory=list)  # store.history.fileview.Changed
    title: str = ""
    live: bool = False  # `new_tree` is the working tree's (read again while shown)


class Source:
    """One project (a local one, or one fetched from a remote) as `rewind ui` reads it."""

    def __init__(self, app: App, target: Target):
        self.app, self.target = app, target
        self.lock = threading.RLock()
        self._rows: Iterator[Checkpoint] | None = None
        self.count = 0  # rows in the whole history (known from the tip's summary)
        self.loaded: list[Row] = []
        self._now: tuple[float, str] | None = None  # (when, tree) of the working tree
        self._adopted = False  # rows read by another process (early.py): read again on `more`
        self.first_screen = FIRST_SCREEN  # rows `open` reads: no more than a screen shows

    @property
    def title(self) -> str:
        return self.target.title

    @property
    def fetched(self) -> bool:
        return self.target.fetched is not None

    @property
    def key(self) -> str:
        return self.target.key

    # -- the timeline -------------------------------------------------------------------

    def open(self) -> list[Row]:
        """The newest rows (a screen's worth), from a fresh reading of the history."""
        with self.lock:
            self.loaded, self._adopted = [], False
            self.open_rows()
            return self.more(self.first_screen)

    def open_rows(self) -> None:
        """The history's checkpoints, newest first, ready to be read as rows."""
        with self.lock:
            self._rows, self.count = None, 0
            if not self.app.store.exists():
                return
            from rewindfs.store.history import page

            repo = self.app.store.repo
            found = page(repo, self.key)
            if found is not None:
                self.count = found.rows
                self._rows = iter(found)
            else:
                whole = st.checkpoints(repo, self.key)
                self.count = len(whole)
                self._rows = iter(whole)

    def adopt(self, rows: list[Row], count: int) -> None:
        """The first rows and the history's length as another process read them
        (rewindfs.ui.early): shown at once; this one opens the history itself on `more`."""
        self.loaded, self.count, self._rows, self._adopted = list(rows), count, None, True

    def more(self, n: int) -> list[Row]:
        """The next `n` rows (fewer at the end); a row that does not read as the records
        said drops them (the next reading walks the objects and names the damage)."""
        from rewindfs.store.history import Surprise

        with self.lock:
            if self._adopted:
                self._reopen()
            if self._rows is None:
                return []
            repo, out = self.app.store.repo, []
            try:
                for cp in self._rows:
                    out.append(self._row(repo, cp))
                    if len(out) >= n:
                        break
                else:
                    self._rows = None
            except Surprise as exc:
                from rewindfs.store.history import forget_records

                self._rows = None
                forget_records(self.app.store.layout, self.key)
                raise StoreError(f"the history could not be read past this point ({exc}); "
                                 "reopen to read it from the objects") from None
            self.loaded += out
            return out

    def _reopen(self) -> None:
        """After `adopt`: the history opened here, past the rows already shown; when it
        no longer starts with them (a checkpoint taken meanwhile), StoreError, and the
        timeline is read again."""
        shown = [row.cp.id for row in self.loaded]
        self._adopted = False
        self.open_rows()
        for want in shown:
            cp = next(self._rows, None) if self._rows is not None else None
            if cp is None or cp.id != want:
                self._rows = None
                raise StoreError("the history changed while it was shown; reopen to see it")

    @property
    def complete(self) -> bool:
        if self._adopted:
            return len(self.loaded) >= self.count
        return self._rows is None

    def _row(self, repo, cp: Checkpoint) -> Row:
        from rewindfs.store.history import total_size

        stats = st.stats(repo, cp)
        size = total_size(repo, self.app.store.layout, self.key, cp) if cp.root else None
        return Row(cp, stats.files_changed, stats.insertions, stats.deletions, size)

    def tip(self) -> str | None:
        """The id of the project's newest checkpoint now (None: none)."""
        with self.lock:
            if not self.app.store.exists():
                return None
            from rewindfs.store.history import newest

            return newest(self.app.store.repo, self.key) or None

    # -- files and one file -------------------------------------------------------------

    def working_tree(self, fresh: bool = False) -> str:
        """The working tree's tree id, captured at most FRESH seconds ago (no checkpoint
        is recorded: `rewind diff`'s capture), into the project's store as it is: never
        one made (or made again, after `rewind clear`) to hold it."""
        with self.lock:
            if fresh or self._now is None or time.monotonic() - self._now[0] > FRESH:
                workdir = self.target.workdir
                if not workdir.is_dir():
                    raise NotFound(f"{workdir} is not a directory here to compare with")
                tree = st.working_tree_tree(self.app.store, workdir, self.app.limits,
                                            self.app.extra_excludes, create=False)
                self._now = (time.monotonic(), tree)
            return self._now[1]

    def files(self, cp: Checkpoint, step: bool, newer: Checkpoint | None) -> Files:
        """What differs from `cp` to the working tree now (what a restore would change:
        `step` False), or what its step changed (`step`: from it to `newer`, the next
        checkpoint, or the working tree when it is the newest; a checkpoint taken after
        its step, from its parent to it)."""
        from rewindfs.store.history import fileview

        with self.lock:
            repo = self.app.store.repo
            name = f"#{cp.number}" if cp.number else cp.short
            if step and cp.trailers.get(PHASE) == "after":
                old = self._parent_tree(repo, cp)
                found = Files(cp, True, old, cp.tree_id, title=f"{name} changed")
            elif step:
                later = newer.tree_id if newer is not None else self.working_tree()
                upto = f"#{newer.number}" if newer is not None and newer.number else \
                    newer.short if newer is not None else "now"
                found = Files(cp, True, cp.tree_id, later,
                              title=f"the step after {name} changed ({name} -> {upto})",
                              live=newer is None)
            else:
                found = Files(cp, False, cp.tree_id, self.working_tree(),
                              title=f"changed since {name} (r restores)", live=True)
            found.changed = fileview.listing(repo, found.old_tree, found.new_tree)
            return found

    def file_change(self, files: Files, path: bytes):
        from rewindfs.store.history import fileview

        with self.lock:
            return fileview.change(self.app.store.repo, files.old_tree, files.new_tree, path)

    def file_content(self, cp: Checkpoint, path: bytes):
        from rewindfs.store.history import fileview

        with self.lock:
            return fileview.content(self.app.store.repo, cp.tree_id, path)

    def change_in(self, cp: Checkpoint, path: bytes):
        """`path`'s change in `cp` against the checkpoint before it (a search's hit)."""
        from rewindfs.store.history import fileview

        with self.lock:
            repo = self.app.store.repo
            return fileview.change(repo, self._parent_tree(repo, cp), cp.tree_id, path)

    @staticmethod
    def _parent_tree(repo, cp: Checkpoint) -> str | None:
        from rewindfs.store.history import pathlog

        found = pathlog.parent_tree(repo, cp)
        return None if found == pathlog.UNKNOWN else found

    def mount_path(self, cp: Checkpoint) -> str:
        """Where `cp` is in the live rewindfs mount."""
        from rewindfs.fs.locate import mounted_checkpoints, our_mount

        mount_dir = self.app.settings.mount_dir
        if self.fetched:
            raise NotFound("a fetched project's checkpoints are under @REMOTE/ in the mount")
        if our_mount(mount_dir) is None:
            raise NotFound(f"no rewindfs mount at {mount_dir}: `rewind mount` first")
        found = mounted_checkpoints(mount_dir, self.target.workdir).get(cp.id)
        if found is None:
            raise NotFound(f"checkpoint {cp.short} is not in the mount at {mount_dir} (yet)")
        return str(found)
