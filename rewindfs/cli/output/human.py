"""Sizes, spans and ages as people read them (`12.3 MiB`, `5m ago`)."""

from __future__ import annotations

import time
from typing import Any

SHOW = 20  # projects or archives listed before "... and N more"


def human_bytes(n: int | float | None) -> str:
    """Binary units, named as such (1 KiB = 1,024 bytes), as the docs and the size cap
    count them."""
    size = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def human_span(seconds: float) -> str:
    """3d, 5h, 12m, 40s."""
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def human_age(epoch: float | None, now: float | None = None) -> str:
    if not epoch:
        return "-"
    age = (time.time() if now is None else now) - epoch
    return "now" if age < 1 else f"{human_span(age)} ago"


def human_date(epoch: float | None) -> str:
    """2024-05-01 14:03 (local time), or "-" when there is none."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch)) if epoch else "-"


_WRITTEN_OUT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(text: str, *, tabs: bool = False) -> str:
    """Text from outside (a remote's records and messages, an agent's database, a file's
    name or lines) as a terminal may get it: control characters (C0, DEL, C1),
    invisible formatting (bidi overrides, zero widths) and line separators written out
    (`\\x1b`, `\\n`, `\\u202e`), never obeyed; printable text, spaces included, as
    it is; `tabs`: tabs too (a file's lines, shown as lines). The one escape for
    terminal output, in text and in errors (cli.failure), in `rewind ui` too."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or (tabs and c == "\t") else _written_out(c)
                   for c in text)


def _written_out(c: str) -> str:
    code = ord(c)
    if c in _WRITTEN_OUT:
        return _WRITTEN_OUT[c]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def setting_text(value: Any) -> str:
    """A setting's value as `rewind config` prints it (true, 10, a, b or [])."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(value) if value else "[]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
