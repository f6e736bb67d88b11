"""One MCP server's state: which project a tool call names, one call at a time, and the
guards of a restore (read-only unless allowed; never while another restore of the project
runs; never outside the project).

A tool call never waits long for another process: reads wait at most LOCK_WAIT for a
project someone is checkpointing, and a restore does not wait at all behind another
restore of the project (its journal has an unfinished entry and its lock is held), so the
model hears why at once instead of a call that hangs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rewindfs.cli.app import App
from rewindfs.errors import Busy, InvalidInput, Refused
from rewindfs.store import project_hash
from rewindfs.store.objects import locks

LOCK_WAIT = 10.0  # seconds a call waits for a project another process holds (a checkpoint)


def refusal(tool: str, cli: str) -> str:
    return (f"{tool} is not allowed: this rewind MCP server is read-only, and nothing was "
            f"changed. The user can allow it by starting the server with `rewind mcp "
            f"--allow-restore` (or installing it with `rewind hooks install AGENT --mcp "
            f"--allow-restore`), or run `{cli}` in the project themselves.")


@dataclass
class Session:
    app: App
    directory: Path  # the server's directory (-C, else its cwd): the default project
    allow_restore: bool = False
    _one_call: threading.Lock = field(default_factory=threading.Lock)
    _restoring: set[str] = field(default_factory=set)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def project(self, given: str | None) -> Path:
        """The project a call names (a path, relative to the server's directory), as the
        CLI's -C finds it: the project around that directory."""
        if given is None or not given.strip():
            return self.app.project_dir(str(self.directory))
        if "\0" in given:
            raise InvalidInput("project path contains a NUL byte")
        path = Path(os.path.expanduser(given))
        return self.app.project_dir(str(path if path.is_absolute() else self.directory / path))

    @contextmanager
    def call(self) -> Iterator[None]:
        """One tool call at a time (the store's handles are shared), each lock of another
        process waited for LOCK_WAIT at most."""
        with self._one_call, locks.waiting_at_most(LOCK_WAIT):
            yield

    @contextmanager
    def restoring(self, workdir: Path, tool: str, cli: str) -> Iterator[None]:
        """Around a restore or undo of `workdir` (the whole of it: plan and change)."""
        if not self.allow_restore:
            raise Refused(refusal(tool, cli))
        key = project_hash(workdir)
        with self._guard:
            if key in self._restoring:
                raise Busy(f"another restore of {workdir} is running (asked of this server); "
                           "nothing was changed: try again once it has finished")
            self._restoring.add(key)
        try:
            from rewindfs.restore import journal

            jpath = journal.path_for(self.app.store.layout, key)
            running = journal.unfinished(jpath) is not None
            try:
                with self._one_call, locks.waiting_at_most(0 if running else LOCK_WAIT):
                    yield
            except Busy:
                who = locks.holder(self.app.store.layout.lock_file(key))
                by = f" (process {who})" if who else ""
                if journal.unfinished(jpath) is not None:
                    raise Busy(f"another restore of {workdir} is running{by}; nothing was "
                               "changed: try again once it has finished") from None
                raise Busy(f"{workdir} is locked by another rewind process{by} (a checkpoint "
                           "or a restore); nothing was changed: try again shortly") from None
        finally:
            with self._guard:
                self._restoring.discard(key)
