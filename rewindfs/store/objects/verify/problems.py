"""What `rewind check` reports: a problem, the safe repair it allows, the report.

Also the small readers every check shares (a damaged file is read as bytes, never trusted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rewindfs.errors import StoreDamaged

STALE_SECONDS = 60.0  # git and rewindfs hold their lock and temp files for milliseconds
_HEX = frozenset("0123456789abcdef")


@dataclass
class Problem:
    path: Path
    problem: str
    repair: str | None = None  # what --repair does about it; None: cannot be repaired safely
    fix: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    harmless: bool = False  # does not affect reads (stale locks, caches): not damage

    def as_error(self) -> StoreDamaged:
        return StoreDamaged(self.path, self.problem)


@dataclass
class Report:
    store: Path
    problems: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def damaged(self) -> list[Problem]:
        return [p for p in self.problems if not p.harmless]

    @property
    def clean(self) -> bool:
        return not self.problems


def is_oid(text: str) -> bool:
    return len(text) == 40 and set(text) <= _HEX


def read_text(path: Path) -> str | None:
    data = read_bytes(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
