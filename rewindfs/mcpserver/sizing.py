"""Output sized for a model: lists capped with "N more", diffs and files cut at a line (or
inside one too long to keep whole) with a note saying what was left out, binary files
described instead of dumped, every line from the store bounded, and no control character
from the project (a file name, a reason, a file's bytes) passed on raw."""

from __future__ import annotations

import re

LIST_DEFAULT = 20  # checkpoints listed when the model gives no limit
LIST_MAX = 100  # ... and at most, whatever it asks
FILES_SHOWN = 40  # changed files named before "... and N more"
NAMES_CHARS = 8_000  # ... and no more characters of names than this
PATCH_CHARS = 24_000  # a diff's patch, cut past this
FILE_CHARS = 48_000  # a file's text, cut past this
REASON_CHARS = 200  # a reason or label in a list's row
LINE_CHARS = 2_000  # any other line from the store or an error
BINARY_PROBE = 8000  # as git: a NUL byte in the first 8000 bytes makes a file binary

# Control characters, and lone surrogates: a byte that was not UTF-8 in a name Python
# decoded (os.fsdecode), which no JSON encoder may send.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\ud800-\udfff]")


def _shown(found: re.Match[str]) -> str:
    code = ord(found.group())
    if 0xDC80 <= code <= 0xDCFF:  # the byte os.fsdecode kept as a surrogate
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"


def clean(text: str) -> str:
    """`text` with control characters (ANSI escapes, carriage returns...) and bytes that
    were not UTF-8 shown as `\\xNN`; newlines and tabs stay."""
    return _CONTROL.sub(_shown, text)


def one_line(text: str, limit: int = LINE_CHARS) -> str:
    """A reason, a label or an error as one line of text, at most about `limit` long."""
    line = clean(" ".join(text.split()))
    if len(line) <= limit:
        return line
    return f"{line[:limit]}... ({len(line) - limit} more characters)"


def capped(items: list[str], shown: int = FILES_SHOWN, chars: int = NAMES_CHARS) -> list[str]:
    """`items`, the first `shown` of them (and no more than `chars` characters of them
    past the first) and a last line saying how many more."""
    used = 0
    for at, item in enumerate(items):
        if at >= shown or (at and used + len(item) > chars):
            return [*items[:at], f"... and {len(items) - at} more"]
        used += len(item)
    return items


def cut(text: str, limit: int, advice: str) -> str:
    """`text` up to `limit` characters, at the end of a line (inside the line, when one
    line is most of it: a minified file), then a note of what was left out and how to
    get it (`advice`)."""
    if len(text) <= limit:
        return text
    end = text.rfind("\n", 0, limit) + 1
    if end < limit // 2:
        end = limit
    shown, rest = text[:end], text[end:]
    lines = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    if shown.endswith("\n"):
        what = f"{lines} more line(s)"
    else:
        shown += "\n"
        what = f"the rest of this line and {lines - 1} more line(s)"
    return shown + f"[... {what}, {len(rest)} characters, not shown: {advice}]"


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
