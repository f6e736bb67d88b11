"""A drop-in for upstream Hermes Agent's `tools.checkpoint_manager` module.

A harness written against Hermes changes one import and nothing else:

    from rewindfs.hermes import CheckpointManager, maybe_auto_prune_checkpoints, ...

Names, signatures, defaults and result dictionaries are Hermes's (extra keys are
rewindfs's own and come on top). Like Hermes, everything here works on the
checkpoint base `CHECKPOINT_BASE` (`$HERMES_HOME/checkpoints`): when a caller
replaces that module attribute (tests do), managers and functions use the new
value; otherwise the Hermes home is looked up on each call, as it may change
while a process runs. Maintenance never raises: failures are counted in `errors`
or reported under `error`, as Hermes does.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from rewindfs import config
from rewindfs.agent import checks
from rewindfs.agent.manager import CheckpointManager as _RewindManager
from rewindfs.errors import RewindError
from rewindfs.store.maintenance import auto, legacy, status, sweep, wipe
from rewindfs.store.objects import DEFAULT_EXCLUDES as _EXCLUDES
from rewindfs.store.objects import Layout, marker, normalize_workdir, project_hash

log = logging.getLogger(__name__)

CHECKPOINT_BASE: Path = Layout.for_home().base
_CHECKPOINT_BASE_AT_IMPORT = CHECKPOINT_BASE
DEFAULT_EXCLUDES: list[str] = list(_EXCLUDES)

# Settings a Hermes harness does not pass to the manager: taken from config.yaml.
_FROM_CONFIG = ("max_files", "extra_excludes", "auto_prune", "retention_days",
                "delete_orphans", "min_interval_hours", "auto_push", "auto_push_delay",
                "remote_timeout")


def _base() -> Path:
    """The checkpoint base: CHECKPOINT_BASE if replaced, else the current Hermes home's."""
    if CHECKPOINT_BASE != _CHECKPOINT_BASE_AT_IMPORT:
        return Path(CHECKPOINT_BASE)
    return Layout.for_home().base


def _layout(checkpoint_base: str | os.PathLike[str] | None) -> Layout:
    return Layout(Path(checkpoint_base).expanduser() if checkpoint_base else _base())


class CheckpointManager(_RewindManager):
    """rewindfs's CheckpointManager with Hermes's constructor and checkpoint base.

    Settings Hermes's constructor does not take (auto_prune, retention_days, ...)
    come from the `checkpoints:` section of the home's config.yaml, the file Hermes
    reads too, unless given as keywords.
    """

    def __init__(self, enabled: bool = False, max_snapshots: int = 20,
                 max_total_size_mb: int = 500, max_file_size_mb: float = 10,
                 **options: Any):
        settings = _settings(Path(options["base"]).expanduser().parent if options.get("base")
                             else _base().parent)
        for key in _FROM_CONFIG:
            options.setdefault(key, settings[key])
        super().__init__(enabled, max_snapshots, max_total_size_mb, max_file_size_mb,
                         **options)

    def _default_base(self) -> Path:
        return _base()


def _settings(home: Path) -> dict[str, Any]:
    try:
        return dict(config.load(home).values)
    except RewindError as exc:  # a bad config must not stop the agent: defaults then
        log.warning("checkpoint settings: %s; using defaults", exc)
        return {key: default for key, (default, _) in config.KEYS.items()}


# -- maintenance ------------------------------------------------------------------------


def _counts(report: sweep.Report | None = None) -> dict[str, Any]:
    """A sweep report as Hermes's prune result: scanned, deleted_orphan, deleted_stale,
    errors, bytes_freed (with Hermes's meanings), then rewindfs's breakdown."""
    if report is None:
        return sweep.Report().to_dict()
    return report.to_dict()


def prune_checkpoints(retention_days: float = 7, delete_orphans: bool = True,
                      checkpoint_base: str | os.PathLike[str] | None = None,
                      max_total_size_mb: int = 0,
                      orphan_allowlist: set[str] | None = None) -> dict[str, Any]:
    """Remove orphan and stale projects (pre-v2 repositories too) and expired legacy
    archives, cap the store's size, and free the space now.

    `orphan_allowlist` (project hashes; pre-v2 repositories by path as str): only these
    orphans may go, e.g. the ones a confirmation prompt showed; None: every orphan.
    A deleted project goes now, without waiting for its quarantine to end, as from
    `rewind prune`: whoever calls this asked for it.
    Returns {scanned, deleted_orphan, deleted_stale, errors, bytes_freed, ...}.
    """
    layout = _layout(checkpoint_base)
    if not layout.base.exists():
        return _counts()
    allow = frozenset(str(x) for x in orphan_allowlist) if orphan_allowlist is not None \
        else None
    policy = sweep.Policy(retention_days, delete_orphans, max_total_size_mb,
                          orphan_allowlist=allow, purge_deleted=True, reclaim_now=True)
    try:
        return _counts(sweep.run(layout, policy))
    except Exception as exc:  # noqa: BLE001 - maintenance must never stop a harness
        log.warning("checkpoint maintenance stopped: %s", exc)
        return {**_counts(), "errors": 1}


def maybe_auto_prune_checkpoints(retention_days: float = 7, min_interval_hours: float = 24,
                                 delete_orphans: bool = True,
                                 checkpoint_base: str | os.PathLike[str] | None = None,
                                 max_total_size_mb: int = 0) -> dict[str, Any]:
    """The automatic sweep, at most once per `min_interval_hours` (the `.last_prune`
    marker, shared with Hermes), run in the caller as Hermes's is. Deleted projects
    stay in quarantine (see store.maintenance.quarantine) until it ends.

    Returns {"skipped": bool, "result": prune result (when it ran), "error": text (when
    it failed)}; skipped also when another process is sweeping right now.
    """
    layout = _layout(checkpoint_base)
    out: dict[str, Any] = {"skipped": False}
    try:
        if not layout.base.exists():
            out["result"] = _counts()
            return out
        if not marker.due(layout, min_interval_hours):
            out["skipped"] = True
            return out
        policy = sweep.Policy(retention_days, delete_orphans, max_total_size_mb)
        report = auto.run_if_due(layout, policy, min_interval_hours)
        if report is None:  # another process got there first
            out["skipped"] = True
        else:
            out["result"] = _counts(report)
    except Exception as exc:  # noqa: BLE001 - startup maintenance must never stop a harness
        log.warning("checkpoint auto-maintenance failed: %s", exc)
        out["error"] = str(exc)
    return out


def store_status(checkpoint_base: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Hermes's summary of the base: base, store_size_bytes, legacy_size_bytes,
    total_size_bytes, project_count, projects [hash, workdir, exists, created_at,
    last_touch, commits, ...], pre_v2_projects [path, workdir, exists] and
    legacy_archives [name, size_bytes, mtime, ...]."""
    layout = _layout(checkpoint_base)
    try:
        return status.store_status(layout, sweep.Policy().retention_days).to_dict()
    except (RewindError, OSError) as exc:  # e.g. the base is not a directory
        log.warning("checkpoint status of %s unavailable: %s", layout.base, exc)
        return status.StoreStatus(str(layout.base)).to_dict()


def clear_all(checkpoint_base: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Delete the whole checkpoint base (every project's history, legacy archives).

    Returns {"bytes_freed": N, "deleted": bool}.
    """
    layout = _layout(checkpoint_base)
    out: dict[str, Any] = {"bytes_freed": 0, "deleted": False}
    if not layout.base.exists():
        return out
    try:
        out["bytes_freed"] = wipe.clear_base(layout)
        out["deleted"] = True
    except (RewindError, OSError) as exc:
        log.warning("could not clear checkpoint base %s: %s", layout.base, exc)
    return out


def clear_legacy(checkpoint_base: str | os.PathLike[str] | None = None) -> dict[str, int]:
    """Delete every legacy-* archive. Returns {"bytes_freed": N, "deleted": count}."""
    count, freed = legacy.clear(_layout(checkpoint_base))
    return {"bytes_freed": freed, "deleted": count}


# -- display ----------------------------------------------------------------------------


def format_checkpoint_list(checkpoints: list[dict[str, Any]], directory: str) -> str:
    """The checkpoints (from list_checkpoints or list_all_checkpoints) as text for a
    person: numbered newest first, with the /rollback commands that use the numbers."""
    if not checkpoints:
        return f"No checkpoints found for {directory}"
    every_project = directory == "all directories"
    lines = [f"Checkpoints of {directory} (1 = newest):", ""]
    for number, cp in enumerate(checkpoints, start=1):
        fields = [f"{number:>3}.", cp.get("short_hash") or cp["hash"][:8], _when(cp)]
        if every_project and cp.get("workdir"):
            fields.append(f"[{Path(cp['workdir']).name or cp['workdir']}]")
        fields.append(cp.get("reason", ""))
        files = cp.get("files_changed", 0)
        if files:
            fields.append(f"({files} file{'' if files == 1 else 's'}, "
                          f"+{cp.get('insertions', 0)}/-{cp.get('deletions', 0)})")
        lines.append("  ".join(fields))
    lines += ["", "  /rollback N            go back to checkpoint N",
              "  /rollback diff N       what changed since checkpoint N",
              "  /rollback N FILE       bring back one file from checkpoint N"]
    return "\n".join(lines)


def _when(cp: dict[str, Any]) -> str:
    try:
        return datetime.fromisoformat(cp["timestamp"]).strftime("%Y-%m-%d %H:%M")
    except (KeyError, TypeError, ValueError):
        return str(cp.get("timestamp", ""))


# -- helpers Hermes exposes under these names -------------------------------------------


def _normalize_path(path_value: str) -> Path:
    return normalize_workdir(path_value)


def _project_hash(working_dir: str) -> str:
    return project_hash(working_dir)


def _validate_commit_hash(commit_hash: str) -> str | None:
    return checks.reference_error(commit_hash)


def _validate_file_path(file_path: str, working_dir: str) -> str | None:
    return checks.file_path_error(file_path, normalize_workdir(working_dir))


__all__ = [
    "CHECKPOINT_BASE", "DEFAULT_EXCLUDES", "CheckpointManager", "clear_all", "clear_legacy",
    "format_checkpoint_list", "maybe_auto_prune_checkpoints", "prune_checkpoints",
    "store_status",
]
