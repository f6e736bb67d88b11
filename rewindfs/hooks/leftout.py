"""What a command may destroy that the hook's checkpoint does not hold: the outcome's
`left_out` field, for the hook's answer to the agent's user.

    {"files": [{"kind", "path", "size", "why"}, ...], "count": N}

`files` names at most MOST of them (`count` says how many in all), kinds in
store.history.leftout.WHY:

- every file the checkpoint (or, when nothing changed, the newest one) left out of the
  project: over the size cap, tracked by git but left out by the person's rules,
  unreadable, ...: any command may destroy any of them;
- for a `git clean` (agent.classify.cleans), the paths it deletes that the excludes keep
  out of every checkpoint (kind "ignored"; an ignored directory is one path ending with
  "/", never walked), as git decides what it deletes: plain `git clean` only what git does
  not ignore, `-x` everything it does not track, `-X` only what it ignores.

`notice` says it in one line (None when nothing is left out). Never raises: a hook must
not fail over a notice (what went wrong is logged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewindfs.hooks import hooklog

MOST = 20


def of_checkpoint(command: str, workdir: Path, skipped: dict[str, list[str]],
                  sizes: dict[str, int]) -> dict[str, Any] | None:
    """For a checkpoint just taken (SnapshotResult.skipped_files and .sizes)."""
    try:
        from rewindfs.store.history import leftout

        return _field(leftout.entries(skipped, sizes), command, workdir)
    except Exception as exc:  # noqa: BLE001 - a notice is not worth a failed hook
        hooklog.write("-", hooklog.ERROR, f"left-out files not named: {type(exc).__name__}: "
                                          f"{exc}")
        return None


def of_project(command: str, workdir: Path) -> dict[str, Any] | None:
    """For a call that took no checkpoint (nothing changed since the newest)."""
    try:
        from rewindfs.store import Layout, project_hash
        from rewindfs.store.history import leftout

        return _field(leftout.remembered(Layout.for_home(), project_hash(workdir)), command,
                      workdir)
    except Exception as exc:  # noqa: BLE001 - a notice is not worth a failed hook
        hooklog.write("-", hooklog.ERROR, f"left-out files not named: {type(exc).__name__}: "
                                          f"{exc}")
        return None


def _field(found: list, command: str, workdir: Path) -> dict[str, Any] | None:
    from rewindfs.agent.classify.cleans import git_clean

    mode = git_clean(command) if command else None
    count = len(found)
    if mode is not None:
        cleaned, more = _cleaned(mode, workdir)
        found, count = found + cleaned, count + more
    if not found:
        return None
    return {"files": [e.to_json() for e in found[:MOST]], "count": count}


def _cleaned(mode: str, workdir: Path) -> tuple[list, int]:
    """(what a `git clean` of `mode` deletes in `workdir` that no checkpoint holds, how
    many in all)."""
    from rewindfs.agent.classify.cleans import IGNORED_TOO, ONLY_IGNORED
    from rewindfs.store import Layout, Store
    from rewindfs.store.capture import git_ignores, ignored_now
    from rewindfs.store.history import leftout, locked

    store = Store(Layout.for_home())
    with locked(store, workdir) as project:
        paths, count = ignored_now(project, 10 * MOST)
    if mode != IGNORED_TOO:   # which of them git deletes: its own rules say
        by_git = git_ignores(workdir, paths)
        paths = [p for p in paths if (p in by_git) == (mode == ONLY_IGNORED)]
        count = len(paths)
    return [leftout.LeftOut("ignored", p) for p in paths], count


def notice(field: dict[str, Any] | None, most: int = 5) -> str | None:
    """The outcome's `left_out` in one line for the agent's user (None: nothing to say):
    `not in the checkpoint (no restore brings them back): data/train.csv (11.4 MiB, over
    the size cap, max_file_size_mb) and 2 more`."""
    if not field:
        return None
    from rewindfs.cli.output.human import human_bytes
    from rewindfs.store.history import leftout

    found = [leftout.LeftOut(f["kind"], f["path"], f.get("size")) for f in field["files"]
             if f.get("kind") in leftout.WHY and isinstance(f.get("path"), str)]
    if not found:
        return None
    return ("not in the checkpoint (no restore brings them back): "
            + leftout.summary(found, field.get("count", len(found)), most, human_bytes))
