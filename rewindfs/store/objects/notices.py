"""Damage met on the way that does not stop a command: said once, to whoever listens.

A broken history (store.history.breaks) is the example: `rewind list` still lists what
it can read, but the person must be told, in one line naming the damaged object. The
CLI listens (`listening`: each message once, as `rewind: warning: ...`); without a
listener (the agent API, the mount) each message is logged once as a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

MAX_REMEMBERED = 1000  # distinct messages logged once each (then once more)

_listener: ContextVar[Callable[[str], None] | None] = ContextVar("notices", default=None)
_logged: set[str] = set()


def notice(message: str) -> None:
    """Say `message` (one line, no trailing period needed) once."""
    say = _listener.get()
    if say is not None:
        say(message)
        return
    if message in _logged:
        return
    if len(_logged) >= MAX_REMEMBERED:
        _logged.clear()
    _logged.add(message)
    import logging  # only here: most commands never log, and logging costs 5 ms to import

    logging.getLogger(__name__).warning("%s", message)


@contextmanager
def listening(say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, notices go to `say`, each distinct one once."""
    said: set[str] = set()

    def once(message: str) -> None:
        if message not in said:
            said.add(message)
            say(message)

    token = _listener.set(once)
    try:
        yield
    finally:
        _listener.reset(token)
