"""Commit messages: subject = the human reason, then git-style trailers for metadata.

Hermes shows only the subject (`%s`), so trailers are invisible to it; they never
touch the file tree.
"""

from __future__ import annotations

import re

# Trailers rewindfs writes (Hermes writes none).
STATS_TRAILER = "Rewind-Stats"  # files, insertions, deletions against the parent
TIME_TRAILER = "Rewind-Time"  # sub-second time
RESTORE_TARGET_TRAILER = "Rewind-Restore-Target"  # a pre-rollback snapshot's restore target
PRE_ROLLBACK_SUBJECT = "pre-rollback snapshot"

_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*): (.*)$")


def compose_message(reason: str, trailers: dict[str, str]) -> str:
    from rewindfs.store.history.redaction import redact  # (writing only: reading needs none)

    subject = redact(" ".join(reason.split())) or "checkpoint"   # every message's subject
    if not trailers:
        return subject + "\n"
    lines = [f"{key}: {' '.join(str(value).split())}" for key, value in trailers.items()]
    return subject + "\n\n" + "\n".join(lines) + "\n"


def parse_message(message: str) -> tuple[str, dict[str, str]]:
    """(subject, trailers) of a checkpoint message; the subject is the first paragraph."""
    paragraphs = message.strip("\n").split("\n\n")
    subject = " ".join(paragraphs[0].split())
    trailers: dict[str, str] = {}
    if len(paragraphs) > 1:
        for line in paragraphs[-1].splitlines():
            match = _TRAILER.match(line)
            if match:
                trailers[match.group(1)] = match.group(2)
    return subject, trailers
