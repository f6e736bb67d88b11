"""Where a capture learns what changed since an earlier one: a watch, when one is registered.

The store knows nothing of watching. The resident process (rewindfs.resident) watches
the projects it has checkpointed and, in each process it forks to do a checkpoint or
serve a command, registers a `Source` here. Every capture then asks it first (`begin`):
the source answers with a `Plan`: what changed since a capture it trusts (a
graft.Since, or None when it does not know: the capture walks the tree), and a token
that, handed back with the finished capture (`done`), lets the watch take that capture
as the next one it trusts. No source registered (a command run in its own process, the
Python API, Hermes): `begin` is None and every capture walks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from rewindfs.store.capture.graft import Since
    from rewindfs.store.capture.walk import Limits
    from rewindfs.store.objects.repo import Project


class Plan:
    """What a source answers a capture (a plain class: dataclasses' import would cost
    every command)."""

    __slots__ = ("since", "token")

    def __init__(self, since: Since | None, token: Any):
        self.since = since   # what changed since a trusted capture (None: walk)
        self.token = token   # the source's, handed back by `done`


class Source(Protocol):
    def begin(self, workdir: Path, limits: Limits) -> Plan | None: ...

    def done(self, workdir: Path, token: Any, limits: Limits, capture: Any) -> None: ...


_source: Source | None = None
_make: Callable[[], Source | None] | None = None


def register(source: Source | None) -> None:
    """The watch this process's captures ask (None: none, every capture walks)."""
    global _source, _make
    _source, _make = source, None


def register_later(make: Callable[[], Source | None]) -> None:
    """`register(make())`, done by the first capture that asks (a command that captures
    nothing never imports the source)."""
    global _source, _make
    _source, _make = None, make


def _current() -> Source | None:
    global _source, _make
    if _make is not None:
        make, _make = _make, None
        try:
            _source = make()
        except Exception:  # noqa: BLE001 - no watch: walk
            _source = None
    return _source


def active() -> bool:
    """Whether a watch is registered (then a stat walk to prove nothing changed, the
    stat stamp's, costs more than asking it)."""
    return _source is not None or _make is not None


def begin(project: Project, limits: Limits) -> Plan | None:
    source = _current()
    if source is None:
        return None
    try:
        return source.begin(project.workdir, limits)
    except Exception:  # noqa: BLE001 - a watch that fails is a watch not trusted: walk
        return None


def done(project: Project, plan: Plan, limits: Limits, capture: Any) -> None:
    if _source is not None:
        try:
            _source.done(project.workdir, plan.token, limits, capture)
        except Exception:  # noqa: BLE001 - the capture stands; the watch forgets its base
            pass
