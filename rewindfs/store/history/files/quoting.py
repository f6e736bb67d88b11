"""File names as people can read them, quoted the way git quotes them.

A name that is printable UTF-8 without `"` or `\\` prints as it is (git with
`core.quotePath=false`). Anything else is put in double quotes with C escapes:
`\\t \\n \\" \\\\` and friends, other control characters and bytes that are not
printable UTF-8 as three-digit octal (`"caf\\351.txt"` for a Latin-1 name), so a
terminal never receives raw control bytes and every name stays one line.

`unquote_path` reads such a name back (the MCP tools take the names they show): text in
double quotes is a quoted name, with exactly the escapes `quote_path` writes.
"""

from __future__ import annotations

import os
import re

from rewindfs.errors import InvalidInput

_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r",
            34: '\\"', 92: "\\\\"}


def quote_path(name: bytes | str) -> str:
    raw = os.fsencode(name) if isinstance(name, str) else name
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.isprintable() and '"' not in text and "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(raw):
        byte = raw[i]
        if byte in _ESCAPES:
            out.append(_ESCAPES[byte])
            i += 1
            continue
        if 0x20 <= byte < 0x7F:
            out.append(chr(byte))
            i += 1
            continue
        char, size = _utf8_char(raw, i)
        if char is not None and char.isprintable():
            out.append(char)
            i += size
            continue
        out.append(f"\\{byte:03o}")
        i += 1
    return '"' + "".join(out) + '"'


def _utf8_char(raw: bytes, i: int) -> tuple[str | None, int]:
    """The UTF-8 character starting at raw[i] (None if the bytes there are not one)."""
    for size in (2, 3, 4):
        try:
            return raw[i:i + size].decode("utf-8"), size
        except UnicodeDecodeError:
            continue
    return None, 1


_UNESCAPES = {text[1]: code for code, text in _ESCAPES.items()}
_QUOTED = re.compile(r'"((?:[^"\\]|\\[0-3][0-7]{2}|\\[abtnvfr"\\])*)"', re.DOTALL)
_PARTS = re.compile(r'\\([0-3][0-7]{2})|\\([abtnvfr"\\])|([^"\\]+)', re.DOTALL)


def unquote_path(text: str) -> bytes:
    """The name `quote_path` shows as `text` (`"caf\\351.txt"` -> b"caf\\xe9.txt"); text
    that does not start with a double quote is the name itself. InvalidInput for a quoted
    name `quote_path` could not have written."""
    if not text.startswith('"'):
        return os.fsencode(text)
    whole = _QUOTED.fullmatch(text)
    if whole is None:
        raise InvalidInput(f"{text[:100]!r} is not a whole quoted name: one starts and ends "
                           'with a double quote and escapes only \\" \\\\ \\a \\b \\t \\n \\v '
                           '\\f \\r and bytes in three octal digits ("caf\\351.txt")')
    out = bytearray()
    for octal, letter, plain in _PARTS.findall(whole.group(1)):
        if octal:
            out.append(int(octal, 8))
        elif letter:
            out.append(_UNESCAPES[letter])
        else:
            out += os.fsencode(plain)
    return bytes(out)
