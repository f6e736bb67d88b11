"""A small agent harness written against upstream Hermes's checkpoint API (test data).

It uses tools.checkpoint_manager the way current Hermes's agent loop, /rollback and
/diff commands, startup hook and `hermes checkpoints` subcommands do: the checkpoint
manager around write tools and shell commands, safe rollbacks that report kept
files, the session diff, the cross-project list, and the maintenance functions with
a confirmation bound to its preview. tests/hermes/test_hermes_harness.py runs this file
with its import line pointed at rewindfs.hermes and nothing else changed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tools.checkpoint_manager import (
    CheckpointManager,
    clear_all,
    clear_legacy,
    format_checkpoint_list,
    maybe_auto_prune_checkpoints,
    prune_checkpoints,
    store_status,
)

KEPT_LINES = (("skipped_user_edits", "kept your edits"),
              ("skipped_oversize", "kept, too large to checkpoint"),
              ("failed_deletes", "could not remove"))


class Agent:
    """What the agent loop does with the manager."""

    def __init__(self, config: dict):
        self.mgr = CheckpointManager(
            enabled=config["enabled"],
            max_snapshots=config["max_snapshots"],
            max_total_size_mb=config["max_total_size_mb"],
            max_file_size_mb=config["max_file_size_mb"],
        )

    def turn(self) -> None:
        self.mgr.new_turn()

    def write_file(self, path: str, content: str | bytes) -> None:
        self.mgr.ensure_checkpoint(self.mgr.get_working_dir_for_path(path), "before write_file")
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
        self.mgr.record_agent_write(path)

    def terminal(self, cwd: str, command: str) -> int:
        self.mgr.ensure_checkpoint(cwd, f"before terminal: {command}")
        return subprocess.run(command, shell=True, cwd=cwd).returncode

    # /rollback [N [FILE]] [--all], /rollback diff N, /diff session

    def rollback(self, cwd: str, arg: str = "", file: str | None = None,
                 restore_all: bool = False) -> str:
        checkpoints = self.mgr.list_checkpoints(cwd)
        if not arg:
            return format_checkpoint_list(checkpoints, cwd)
        if not checkpoints:
            return "no checkpoints"
        try:
            index = int(arg) - 1
        except ValueError:
            target = arg
        else:
            if not 0 <= index < len(checkpoints):
                return f"pick 1-{len(checkpoints)}"
            target = checkpoints[index]["hash"]
        result = self.mgr.restore(cwd, target, file_path=file, safe=not restore_all)
        if not result["success"]:
            return f"restore failed: {result['error']}"
        lines = [f"restored to {result['restored_to']} ({result['reason']})"]
        files = result.get("restored_files")
        if files is not None:
            lines.append(f"{len(files)} file(s) restored")
        for key, label in KEPT_LINES:
            if result.get(key):
                lines.append(f"{label}: {', '.join(result[key])}")
        return "\n".join(lines)

    def rollback_diff(self, cwd: str, number: int) -> str:
        target = self.mgr.list_checkpoints(cwd)[number - 1]["hash"]
        result = self.mgr.diff(cwd, target)
        return result["diff"] if result["success"] else f"diff failed: {result['error']}"

    def session_diff(self, cwd: str) -> str:
        result = self.mgr.session_diff(cwd)
        if not result["success"]:
            return f"diff failed: {result['error']}"
        return "no changes" if result.get("empty") else result["stat"] + "\n" + result["diff"]

    def list_everything(self) -> str:
        return format_checkpoint_list(self.mgr.list_all_checkpoints(), "all directories")


# startup hook and `hermes checkpoints status|prune|clear|clear-legacy`


def on_startup(config: dict) -> dict:
    if not config.get("auto_prune", True):
        return {"skipped": True}
    return maybe_auto_prune_checkpoints(
        retention_days=config["retention_days"],
        min_interval_hours=config["min_interval_hours"],
        delete_orphans=config["delete_orphans"],
        max_total_size_mb=config["max_total_size_mb"],
    )


def cmd_status() -> list[str]:
    info = store_status()
    lines = [f"base {info['base']}: {info['total_size_bytes']} bytes, "
             f"{info['project_count']} project(s)"]
    for project in info["projects"]:
        state = "" if project["exists"] else " (missing)"
        lines.append(f"  {project['workdir']}: {project['commits']} checkpoint(s){state}")
    for repo in info["pre_v2_projects"]:
        lines.append(f"  pre-v2 {repo['path']} -> {repo['workdir']}")
    for archive in info["legacy_archives"]:
        lines.append(f"  {archive['name']}: {archive['size_bytes']} bytes")
    return lines


def cmd_prune(retention_days: int, keep_orphans: bool, answer) -> dict:
    """Show the orphans, ask, and delete only what was shown and approved."""
    info = store_status()
    shown = [p["hash"] for p in info["projects"] if not p["exists"]]
    shown += [r["path"] for r in info["pre_v2_projects"] if not r["exists"]]
    if shown and not keep_orphans and not answer(shown):
        return {"cancelled": True}
    return prune_checkpoints(retention_days=retention_days, delete_orphans=not keep_orphans,
                             orphan_allowlist=set(shown))


def cmd_clear_legacy() -> str:
    result = clear_legacy()
    return f"deleted {result['deleted']} archive(s), {result['bytes_freed']} bytes"


def cmd_clear() -> str:
    result = clear_all()
    return f"cleared: {result['deleted']}, {result['bytes_freed']} bytes"
