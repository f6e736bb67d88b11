"""Output sized for a model: lists capped with "N more", diffs and files cut at a line
with a note saying what was left out, binary files described instead of dumped, and no
control character from the project (a file name, a reason, a file's bytes) passed on raw."""

from __future__ import annotations

import re

LIST_DEFAULT = 20  # checkpoints listed when the model gives no limit
LIST_MAX = 100  # ... and at most, whatever it asks
FILES_SHOWN = 40  # changed files named before "... and N more"
PATCH_CHARS = 24_000  # a diff's patch, cut at a line past this
FILE_CHARS = 48_000  # a file's text, cut at a line past this
BINARY_PROBE = 8000  # as git: a NUL byte in the first 8000 bytes makes a file binary

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def clean(text: str) -> str:
    """`text` with control characters (ANSI escapes, carriage returns...) shown as
    `\\xNN`; newlines and tabs stay."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def one_line(text: str) -> str:
    """A reason or label as one line of text."""
    return clean(" ".join(text.split()))


def capped(items: list[str], shown: int = FILES_SHOWN) -> list[str]:
    """`items`, the first `shown` of them and a last line saying how many more."""
    if len(items) <= shown:
        return items
    return [*items[:shown], f"... and {len(items) - shown} more"]


def cut(text: str, limit: int, advice: str) -> str:
    """`text` up to the end of the line that crosses `limit` characters, then a note of
    what was left out and how to get it (`advice`)."""
    if len(text) <= limit:
        return text
    end = text.find("\n", limit)
    if end < 0:
        return text
    rest = text[end + 1:]
    lines = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    return (text[:end + 1] + f"[... {lines} more line(s), {len(rest)} characters, not shown: "
            f"{advice}]")


def is_binary(data: bytes) -> bool:
    if b"\0" in data[:BINARY_PROBE]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def file_text(data: bytes, advice: str) -> str:
    """A file's bytes for a model: its text (cut past FILE_CHARS), or a description of a
    binary file."""
    if is_binary(data):
        return f"(binary file, {len(data)} bytes: not shown. {advice})"
    text = data.decode("utf-8")
    shown = clean(text)
    note = "" if shown == text else "(control characters are shown as \\xNN)\n"
    return note + cut(shown, FILE_CHARS, advice)
