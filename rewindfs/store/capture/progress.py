"""How far a capture is: progress reports for a long capture (a first checkpoint of a big tree).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """How far a capture is. `scan`: finding what changed (no totals yet); `store`:
    reading and writing what was found, out of known totals."""

    phase: str
    files: int
    bytes: int
    files_total: int | None = None
    bytes_total: int | None = None


# Long captures (a first checkpoint of a big tree) report progress here; the CLI sets it
# on a terminal. A context variable, so concurrent captures in other threads stay quiet.
_progress: ContextVar[Callable[[Progress], None] | None] = ContextVar("capture_progress",
                                                                      default=None)


PROGRESS_EVERY = 500  # files found between two reports while scanning


PROGRESS_SECONDS = 0.1  # at most this often while storing


@contextmanager
def reporting_progress(report: Callable, *, detailed: bool = False) -> Iterator[None]:
    """Within the block, captures report how far they are.

    By default `report(files_found_so_far)` every PROGRESS_EVERY files while scanning;
    with `detailed`, `report(Progress)` in both phases.
    """
    if not detailed:
        plain = report

        def report(p: Progress) -> None:
            if p.phase == "scan":
                plain(p.files)

    token = _progress.set(report)
    try:
        yield
    finally:
        _progress.reset(token)


def reporter() -> Callable[[Progress], None] | None:
    """Where captures in this context report (set by `reporting_progress`), if anywhere."""
    return _progress.get()
