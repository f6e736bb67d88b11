"""How a failed command ends: one line on stderr and a documented exit code, never a
traceback (except for a genuine bug, which should show).

* RewindError: its message and exit code. A StoreError caused by a libgit2 error is
  reported as the damaged file behind it when that can be named (store.objects.damage).
* A libgit2 error nobody turned into a RewindError: the damaged file behind it, or
  libgit2's message; exit 3.
* The reader of stdout went away (`rewind list | head -1`): end quietly with 141,
  the status a shell reports for git in the same pipeline.
"""

from __future__ import annotations

import os
import select
import sys
from typing import TYPE_CHECKING

import click

from rewindfs.errors import RewindError, StoreDamaged, StoreError

if TYPE_CHECKING:
    from rewindfs.store.objects import Layout

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as for git (which dies by the signal)


def handle(app: object, exc: BaseException) -> int | None:
    """Report `exc` and return the exit code; None when it is a bug to re-raise."""
    if isinstance(exc, BrokenPipeError) and _stdout_gone():
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    if isinstance(exc, KeyboardInterrupt):
        # What the interrupt cut short may be half built (a pygit2 object whose __init__
        # never finished): its finalizer failing at exit is no news after the one line.
        sys.unraisablehook = lambda _unraisable: None
        return _fail("interrupted", 130)
    found = describe(app, exc)
    if found is None:
        return None
    return _fail(*found)


def describe(app: object, exc: BaseException) -> tuple[str, int] | None:
    """The one line (without `rewind: `) and exit code `exc` ends a command with; None
    when it is a bug (`rewind ui` shows the same line in place)."""
    if isinstance(exc, StoreError) and not isinstance(exc, StoreDamaged):
        from rewindfs.store.objects import damage

        # Only a libgit2 error behind it is worth a scan of the store (not a full disk).
        named = damage.explain(_layout(app), exc, scan=damage.from_libgit2(exc)) \
            if exc.__cause__ else None
        return str(named or exc), exc.exit_code
    if isinstance(exc, RewindError):
        return str(exc), exc.exit_code
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}", 3
    from rewindfs.store.objects import damage

    found = damage.as_store_error(_layout(app), exc)
    if found is None:
        return None
    return str(found), found.exit_code


def _fail(message: str, code: int) -> int:
    from rewindfs.cli.output.human import visible  # what a remote or a file name put in it

    click.echo(f"rewind: {visible(' '.join(message.split()))}", err=True)
    return code


def _layout(app: object) -> Layout:
    from rewindfs.store.objects import Layout

    try:
        return Layout(app.settings.base)  # type: ignore[attr-defined]
    except Exception:  # a broken config.yaml must not hide the store's damage
        return Layout.for_home(getattr(app, "home", None))


def _stdout_gone() -> bool:
    """Whether stdout is a pipe (or socket) whose reader has closed it."""
    try:
        poller = select.poll()
        poller.register(1, select.POLLERR | select.POLLHUP)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError):
        return False


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush does not complain."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass
