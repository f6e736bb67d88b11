"""A log that says each distinct failure once: a mount meets the same damage on every request.

One per mount (fs.nodes.context.Context.failures), shared by the request wrapper (fs.answers)
and the watcher (fs.watch): a damaged object that every `ls` and every refresh meets is
one warning in the mount log, not one per request or per second.
"""

from __future__ import annotations

import logging

MAX_REMEMBERED = 10_000  # distinct failures remembered; past that they may be logged again


class OnceLog:
    def __init__(self, logger: logging.Logger):
        self.logger = logger
        self._seen: set[str] = set()

    def warning(self, key: str, message: str, *, exc_info: bool = False) -> None:
        """Log `message` unless a failure with the same `key` was logged already (then at
        debug level only)."""
        if key in self._seen:
            self.logger.debug("%s (again)", message)
            return
        if len(self._seen) >= MAX_REMEMBERED:
            self._seen.clear()
        self._seen.add(key)
        self.logger.warning("%s", message, exc_info=exc_info)
