"""Checks of the agent API's inputs, failing with the messages upstream Hermes uses.

A harness written for Hermes's manager may match on these texts ("Invalid commit
hash", "escapes the working directory", "not found"), so the wording is Hermes's.
The accepted references are wider than Hermes's: besides a 4-64 digit hex hash,
`latest`, a number (1 = newest) and a label name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rewindfs.store.history import LABEL_RE

HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")


def reference_error(reference: str) -> str | None:
    """Why `reference` cannot name a checkpoint, or None when it may."""
    if not isinstance(reference, str) or not reference.strip():
        return "Empty commit hash"
    if reference.startswith("-"):
        return f"Invalid commit hash (must not start with '-'): {reference!r}"
    if HEX.match(reference) or reference == "latest" or reference.isdigit() \
            or LABEL_RE.match(reference):
        return None
    return f"Invalid commit hash (expected 4-64 hex characters): {reference!r}"


def not_found(reference: str) -> str:
    return f"Checkpoint '{reference}' not found"


def file_path_error(file_path: str, workdir: Path) -> str | None:
    """Why `file_path` may not be restored inside `workdir` (resolved), or None.

    Relative only, and neither `..` nor a symlinked directory on the way may lead
    outside the project. The last component is not followed: a symlink is an entry
    of the checkpoint like a file, whatever it points at.
    """
    if not isinstance(file_path, str) or not file_path.strip():
        return "Empty file path"
    if os.path.isabs(file_path):
        return f"File path must be relative, got absolute path: {file_path!r}"
    escapes = f"File path escapes the working directory via traversal: {file_path!r}"
    joined = Path(os.path.normpath(workdir / file_path))
    if joined != workdir and workdir not in joined.parents:
        return escapes
    if joined != workdir:
        parent = joined.parent.resolve()
        if parent != workdir and workdir not in parent.parents:
            return escapes
    return None
