"""The restore journal: which restores happened, so `rewind undo` can reverse the last one.

One JSON line per restore in the project's admin dir. An undo is a restore too,
so undoing an undo works the same way.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Entry:
    target: str  # checkpoint restored to
    pre_rollback: str  # checkpoint holding the state before the restore
    touched: list[str] = field(default_factory=list)  # surrogate-escaped project paths
    kind: str = "restore"  # or "undo"
    time: float = field(default_factory=time.time)
    created_dirs: list[str] = field(default_factory=list)  # made by the restore; undo may drop

    def touched_paths(self) -> list[bytes]:
        return [os.fsencode(p) for p in self.touched]

    def created_dir_paths(self) -> set[bytes]:
        return {os.fsencode(p) for p in self.created_dirs}


def append(path: Path, entry: Entry) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(asdict(entry)) + "\n")


def last(path: Path) -> Entry | None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return Entry(**json.loads(line))
        except (ValueError, TypeError):
            continue
    return None
