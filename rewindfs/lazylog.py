"""Loggers that import `logging` on first use: most `rewind` commands never log, and the
module's import (with what it pulls in) is milliseconds of every command's start-up."""

from __future__ import annotations

from typing import Any


class LazyLogger:
    """`logging.getLogger(name)`, looked up when it is first used."""

    def __init__(self, name: str):
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self._name)
        return getattr(self._logger, attr)


def logger(name: str) -> LazyLogger:
    return LazyLogger(name)
