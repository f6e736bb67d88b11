"""The first screen's rows read in a child process while this one imports textual.

`rewind ui` spends most of its start importing textual (~150 ms here) and reading the
history's newest rows (~50 ms: pygit2's import, the store, the records). The two need
nothing of each other, so a forked child reads the rows, with the same code
(`Source.open`), on the other core, and hands them over through a pipe; the parent shows
them and opens the history itself once the first screen is up (`Source.adopt`). Where
there is no fork (REWIND_PORTABLE=fork, or off Unix) or the child fails in any way, the
parent reads them itself, as it would have anyway.
"""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING

from rewindfs import portable

if TYPE_CHECKING:
    from rewindfs.cli.app import App
    from rewindfs.ui.source import Row, Source

LIMIT = 64 * 1024 * 1024  # bytes of rows a child may hand over (60 rows are a few KiB)


class Early:
    """A child reading the first rows; `result()` waits for them (None: read them here)."""

    def __init__(self, app: App, source: Source):
        self.app, self.source = app, source
        self.pid, self.fd = 0, -1
        if not (portable.linux("fork") and hasattr(os, "fork")):
            return
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if pid == 0:  # the child: read, hand over, and leave without any cleanup
            os.close(read)
            _child(app, source, write)
        os.close(write)
        self.pid, self.fd = pid, read

    def result(self) -> tuple[list[Row], str | None] | None:
        """(rows, error line) as the child read them, the history's length adopted by
        `source`; None when there is no child or it did not finish its work."""
        if self.fd < 0:
            return None
        chunks, size = [], 0
        try:
            while chunk := os.read(self.fd, 1 << 16):
                size += len(chunk)
                if size > LIMIT:
                    return None
                chunks.append(chunk)
        finally:
            os.close(self.fd)
            self.fd = -1
            _reap(self.pid)
        try:
            kind, rows, count, line, said = pickle.loads(b"".join(chunks))
        except Exception:  # noqa: BLE001 - a child that died midway: read here instead
            return None
        if kind != "ok":
            return None
        from rewindfs.store.objects import notices

        for message in said:  # damage the child met (a broken history): said here
            notices.notice(message)
        if line is None:
            self.source.adopt(rows, count)
        return rows, line


def _child(app: App, source: Source, fd: int) -> None:
    from rewindfs.errors import RewindError
    from rewindfs.store.objects import notices

    code, said = 0, []
    try:
        with notices.listening(said.append):
            try:
                payload = ("ok", source.open(), source.count, None, said)
            except RewindError as exc:  # shown in place, in the timeline
                from rewindfs.cli.failure import describe

                payload = ("ok", [], 0, (describe(app, exc) or (str(exc), 1))[0], said)
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:  # noqa: BLE001 - any failure: the parent reads the rows itself
        code = 1
    finally:
        os._exit(code)  # never the parent's atexit handlers, buffers or terminal


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
