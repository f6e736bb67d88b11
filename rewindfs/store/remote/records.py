"""What a remote says about a project, validated before anything uses it.

A remote is written by whoever can push to it, so its project records, labels and step
logs are data, not trust: a record's path is taken only when it is absolute and
normalized (never resolved against the current directory: a restore without `--to`
goes only to the local project of that very path), names and hosts only without
control characters, slashes or NUL (they become directory names in the mount and
reach terminals), and sizes are capped before anything is read whole: a record of
more than MAX_RECORD bytes is left out, as are labels a label here could not be
named (store.history.labels, which also uses at most a thousand of a fetched
project's) and notes past their bounds (store.history.metadata.notes); a fetched step log is
never read. JSON nested too deep is refused, not recursed into.
"""

from __future__ import annotations

import json
import posixpath

MAX_RECORD = 64 * 1024  # bytes of project.json read (a real one is a few hundred)
MAX_PATH = 4096  # PATH_MAX
MAX_HOST = 253  # a DNS name's length


def parse(data: bytes) -> dict:
    """A record's JSON object; {} when it is too big, not JSON, or nested too deep."""
    if len(data) > MAX_RECORD:
        return {}
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def workdir(value: object) -> str | None:
    """The path a record names, when it is one: absolute, normalized (no `.`, `..`,
    `//`, trailing `/`), printable, at most PATH_MAX bytes; else None."""
    if not isinstance(value, str) or not value.startswith("/") or not printable(value):
        return None
    if posixpath.normpath(value) != value or value.startswith("//"):
        return None
    if len(value.encode("utf-8", "surrogateescape")) > MAX_PATH:
        return None
    return value


def host(value: object) -> str | None:
    """A host name as a record gives it, when it can name a directory and reach a
    terminal: printable, no space, no `/`, at most 253 characters; else None."""
    if not isinstance(value, str) or not value or len(value) > MAX_HOST:
        return None
    if not printable(value) or "/" in value or any(c.isspace() for c in value):
        return None
    return value


def printable(text: str) -> bool:
    """No control characters (C0, DEL, C1), no invisible formatting (bidi overrides,
    zero widths), no line or paragraph separators: str.isprintable, space allowed."""
    return text.isprintable()
