"""What `rewind checkpoint` says about the checkpoint it took (or did not need to): the
lines and the --json document (cli.commands.checkpoints)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rewindfs.cli.output.human import visible

if TYPE_CHECKING:
    from rewindfs.store.history import SnapshotResult

DEFAULT_REASON = "manual checkpoint"
# How `rewind checkpoint` names each kind of skipped path (SnapshotResult.skipped_files).
SKIPPED = {
    "oversize": "file(s) over max_file_size_mb",
    "unreadable": "unreadable path(s)",
    "changing": "file(s) that kept changing while read (previous version kept)",
    "too_deep": "directory(ies) nested too deep to capture",
    "excluded": "file(s) git tracks that .rewindignore, extra_excludes or the secret defaults "
                "leave out",
}


def as_json(result: SnapshotResult, label: str | None, git: str | None = None) -> str:
    """`git`: the closing note on the repository's state (store.projectgit)."""
    return json.dumps({"taken": result.taken, "hash": result.commit, "label": label,
                       "directory": result.workdir, "skipped_files": result.skipped_files,
                       "adopted_from": result.adopted_from, "git": git})


def lines(result: SnapshotResult, reason: str, label: str | None,
          git: str | None = None) -> list[str]:
    """What `rewind checkpoint` says (a path, the reason: written out, never obeyed)."""
    short = (result.commit or "")[:8]
    out = []
    if result.adopted_from:
        out.append(f"{result.adopted_from} was moved here: its history continues")
    if result.taken:
        out.append(f"checkpoint {short} taken for {result.workdir}: {reason}")
    elif result.commit:
        out.append(f"no changes since checkpoint {short}; nothing written")
    else:
        out.append(f"nothing to checkpoint in {result.workdir} (no files)")
    if label and result.commit:
        out.append(f"labelled {short} as {label!r}")
    if git:
        out.append(git)
    return [visible(line) for line in out]


def warnings(result: SnapshotResult) -> list[str]:
    """What the capture left out, one warning a kind (for stderr)."""
    if not result.skipped_files:
        return []  # (what follows imports the capture engine, pygit2 included)
    from rewindfs.store.capture import secret_files
    from rewindfs.store.history import quote_path

    out = []
    for why, paths in result.skipped_files.items():
        if why == "private_keys":
            out.append(secret_files.warning([quote_path(p) for p in paths]))
            continue
        if why == "git_index":
            from rewindfs.cli.output.human import visible

            out.extend(f"files git tracks that the excludes match may be missing: "
                       f"{visible(p)}" for p in paths)
            continue
        shown = ", ".join(quote_path(p) for p in paths[:10])
        out.append(f"skipped {len(paths)} {SKIPPED.get(why, why)}: {shown}"
                   + (" ..." if len(paths) > 10 else ""))
    return out
