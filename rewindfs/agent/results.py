"""The result dictionaries of the Hermes-compatible API: Hermes's keys plus rewindfs's.

A checkpoint as Hermes lists it, and what a restore did.
"""

from __future__ import annotations

import os
from typing import Any

from rewindfs import restore as restore_mod
from rewindfs import store as st


def checkpoint_dict(cp: st.Checkpoint, stats: st.Stats | None) -> dict[str, Any]:
    """Hermes's list entry, plus rewindfs's extra keys."""
    return {
        "hash": cp.id,
        "short_hash": cp.short,
        "timestamp": cp.timestamp,
        "time": cp.precise_time,  # epoch seconds, finer than the timestamp
        "reason": cp.reason,
        "files_changed": stats.files_changed if stats else 0,
        "insertions": stats.insertions if stats else 0,
        "deletions": stats.deletions if stats else 0,
        "number": cp.number or None,  # None: a pre-rollback snapshot, or past a break
        "pre_rollback": cp.pre_rollback,
        "past_break": cp.past_break,  # recovered from past a break in the history
        "labels": cp.labels,
        "trailers": cp.trailers,
    }


def names(paths) -> list[str]:
    return [os.fsdecode(p) for p in paths]


def api_restore_dict(result: restore_mod.RestoreResult, file_path: str | None,
                     extras: dict[str, Any]) -> dict[str, Any]:
    """The agent API's restore result: `restore_dict` and `extras` (the target's agent
    state, external actions), in Hermes's meaning of success: every file of the
    checkpoint is back; a file that could not be removed is reported, not a failure."""
    out = {**restore_dict(result, file_path), **extras}
    if out.get("failed_deletes") and result.outcome is not None and \
            len(result.outcome.failed) == len(out["failed_deletes"]) and \
            not result.outcome.not_attempted:
        out["success"] = True
        out.pop("error", None)
    return out


def restore_dict(result: restore_mod.RestoreResult, file_path: str | None) -> dict[str, Any]:
    """Hermes's restore result, plus what rewindfs knows about the restore.

    Hermes's keys: `restored_files` (every file written or removed back to the
    checkpoint), in safe mode `skipped_user_edits` (every file kept because a person
    changed it, whether or not the agent ever wrote it) and `skipped_oversize` (files
    over the size cap that the checkpoint does not hold: left as they are), and
    `failed_deletes` when a file could not be removed. A full restore has no safe-mode
    keys.
    """
    outcome, plan = result.outcome, result.plan
    out: dict[str, Any] = {
        "success": result.success,
        "restored_to": result.target.short,
        "reason": result.target.reason,
        "directory": str(result.directory),
    }
    if file_path:
        out["file"] = file_path
    written = names(outcome.written) if outcome else []
    deleted = names(outcome.deleted) if outcome else []
    out["restored_files"] = sorted(set(written) | set(deleted))
    if result.safe:
        out["skipped_user_edits"] = sorted(names(plan.kept_user_edits + plan.kept_not_agent))
        out["skipped_oversize"] = names(result.kept_oversize)
        out["kept_not_agent"] = names(plan.kept_not_agent)
    failed = [(os.fsdecode(p), e) for p, e in outcome.failed] if outcome else []
    planned_deletes = set(names(plan.deletes))
    failed_deletes = [p for p, _ in failed if p in planned_deletes]
    if failed_deletes:
        out["failed_deletes"] = failed_deletes
    out.update(
        deleted_files=deleted,
        untouched=names(plan.untouched),
        failed=[{"path": p, "error": e} for p, e in failed],
        not_attempted=names(outcome.not_attempted) if outcome else [],
        kept_appeared=names(outcome.appeared) if outcome else [],
        pre_rollback=result.pre_rollback,
        hash=result.target.id,
        safe=result.safe,
        turn_id=result.target.trailers.get("Rewind-Turn"),
        step_id=result.target.trailers.get("Rewind-Step"),
    )
    if not result.success and outcome is not None:
        out["error"] = (f"{result.failed_midway()}; the pre-rollback snapshot "
                        f"{(result.pre_rollback or '')[:8]} holds the previous state "
                        "(rewind undo)")
    return out
