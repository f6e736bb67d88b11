"""How a failure becomes an errno: the one wrapper every FUSE request goes through.

An exception that leaves a pyfuse3 handler ends pyfuse3's main loop, and with it the
whole mount ("Transport endpoint is not connected" for every path): one damaged ref
would take every project down. So every request handler of the operations class is
wrapped here (`guard_handlers`, applied to the class once): only `FUSEError` leaves it.
What is gone (NotFound) is ENOENT, an OSError keeps its errno, and anything else (a
damaged store, or a bug) is EIO. Each distinct failure is logged once (fs.oncelog): a
damaged object met by every `ls` must not fill the mount log.
"""

from __future__ import annotations

import errno
import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

import pyfuse3

from rewindfs.errors import NotFound, RewindError
from rewindfs.fs.oncelog import OnceLog

log = logging.getLogger(__name__)

GUARDED = "_rewind_guarded"  # set on every wrapped handler (tests check they all are)


def errno_for(request: str, exc: Exception, once: OnceLog) -> int:
    """The errno a request answers for `exc`, logged once (what is gone only at debug)."""
    if isinstance(exc, NotFound):
        log.debug("%s: not found: %s", request, exc)
        return errno.ENOENT
    if isinstance(exc, OSError) and exc.errno:
        once.warning(str(exc), f"{request} failed: {exc}")
        return exc.errno
    if isinstance(exc, RewindError):  # a damaged store, said in one line
        once.warning(str(exc), f"{request} failed: {exc}")
        return errno.EIO
    text = f"{type(exc).__name__}: {exc}"
    once.warning(text, f"{request} failed: {text}", exc_info=True)
    return errno.EIO


def _guard(request: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(handler)
    async def answer(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await handler(self, *args, **kwargs)
        except pyfuse3.FUSEError:
            raise
        except Exception as exc:  # noqa: BLE001 - anything else would end the main loop
            raise pyfuse3.FUSEError(errno_for(request, exc, self.failures)) from None

    setattr(answer, GUARDED, True)
    return answer


def requests(cls: type) -> list[str]:
    """Every request handler pyfuse3 may call on `cls` (its async methods, inherited too)."""
    return sorted(name for name in dir(pyfuse3.Operations)
                  if not name.startswith("_")
                  and inspect.iscoroutinefunction(getattr(cls, name, None)))


def guard_handlers(cls: type) -> type:
    """Class decorator: every request handler of `cls` answers through `_guard`.

    The instances need a `failures` attribute (an fs.oncelog.OnceLog)."""
    for name in requests(cls):
        handler = getattr(cls, name)
        if not getattr(handler, GUARDED, False):
            setattr(cls, name, _guard(name, handler))
    return cls
