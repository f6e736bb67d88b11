"""Help text pieces shared by the commands."""

from __future__ import annotations


def examples(*lines: str) -> str:
    """An `Examples:` epilog that click prints as written (the \\b stops re-wrapping)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
