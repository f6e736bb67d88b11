"""How wide `rewind` lays out what it prints, without rich (plain output uses it too):
$COLUMNS when set, a terminal's width, and no width at all off a terminal."""

from __future__ import annotations

import os
import sys
from typing import IO

WIDE = 10_000  # width when not a terminal: tables never wrap or cut a script's lines


def isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def env_columns() -> int | None:
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def stat_width() -> int:
    """The width `rewind diff` lays its stat out for, as git does: $COLUMNS, else the
    terminal's width, else 80."""
    columns = env_columns()
    if columns:
        return columns
    if isatty(sys.stdout):
        import shutil

        return shutil.get_terminal_size().columns
    return 80
