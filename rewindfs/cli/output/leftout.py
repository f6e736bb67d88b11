"""What a checkpoint left out of its project (store.history.leftout), as `rewind show` and
`rewind restore` say it: a heading, then a line a path."""

from __future__ import annotations

import os
from pathlib import Path

from rewindfs.cli.output.human import human_bytes
from rewindfs.store.history import leftout

SHOW = 20  # paths listed before "... and N more"


def of(trailers: dict[str, str], within: list[str] | None = None
       ) -> tuple[list[leftout.LeftOut], int]:
    """(paths named, how many in all) a checkpoint's record says it left out; `within`:
    only under these project-relative paths (a restore of a few paths)."""
    found, total = leftout.decode(trailers)
    if within:
        kept = [e for e in found if any(not p or e.path == p or e.path.startswith(p + "/")
                                        for p in within)]
        return kept, len(kept) if len(found) == total else max(len(kept), total - len(found))
    return found, total


def as_json(found: list[leftout.LeftOut]) -> list[dict]:
    return [e.to_json() for e in found]


def lines(found: list[leftout.LeftOut], total: int, heading: str,
          root: Path | None = None) -> list[str]:
    """`heading` (with the count), then each path and why; `root`: the project, whose
    files missing now are marked so."""
    if not found:
        return []
    out = [f"  {heading.format(count=total)}"]
    for entry in found[:SHOW]:
        gone = root is not None and not os.path.lexists(
            os.fsencode(root) + b"/" + os.fsencode(entry.path))
        out.append(f"    {leftout.phrase(entry, human_bytes)}" + ("; missing now" if gone
                                                                 else ""))
    if total > min(len(found), SHOW):
        out.append(f"    ... and {total - min(len(found), SHOW)} more")
    return out
