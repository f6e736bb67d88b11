"""How long operations report progress: a callable wrapping the items being worked through.

The store never prints; the CLI passes a progress bar on a terminal, scripts get
`quiet` (the default) and stay silent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    def __call__(self, items: Sequence[T], label: str) -> Iterator[T]: ...


def quiet(items: Sequence[T], label: str) -> Iterator[T]:
    return iter(items)
