"""A small agent harness written against upstream Hermes's checkpoint API (test data).

It uses tools.checkpoint_manager (hermes-agent 0.19) the way Hermes's agent loop,
/rollback command, startup hook and `hermes checkpoints` subcommands do, and
nothing that module lacks: the manager around write tools and shell commands, the
numbered list and its formatting, diffs and restores by hash (whole tree or one
file), and the maintenance functions. tests/hermes/test_hermes_harness.py runs this
file as it is against upstream Hermes, and with its import line pointed at
rewindfs.hermes and nothing else changed.
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

    def terminal(self, cwd: str, command: str) -> int:
        self.mgr.ensure_checkpoint(cwd, f"before terminal: {command}")
        return subprocess.run(command, shell=True, cwd=cwd).returncode

    # /rollback [N [FILE]], /rollback diff N

    def rollback(self, cwd: str, arg: str = "", file: str | None = None) -> str:
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
        result = self.mgr.restore(cwd, target, file_path=file)
        if not result["success"]:
            return f"restore failed: {result['error']}"
        return f"restored to {result['restored_to']} ({result['reason']})"

    def rollback_diff(self, cwd: str, number: int) -> str:
        target = self.mgr.list_checkpoints(cwd)[number - 1]["hash"]
        result = self.mgr.diff(cwd, target)
        return result["diff"] if result["success"] else f"diff failed: {result['error']}"

    def reasons(self, cwd: str) -> list[str]:
        return [cp["reason"] for cp in self.mgr.list_checkpoints(cwd)]


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
    lines = [f"{info['project_count']} project(s)"]
    for project in sorted(info["projects"], key=lambda p: p["workdir"]):
        state = "" if project["exists"] else " (missing)"
        lines.append(f"{project['workdir']}: {project['commits']} checkpoint(s){state}")
    for archive in info["legacy_archives"]:
        lines.append(f"archive {archive['name']}")
    return lines


def cmd_prune(retention_days: int, keep_orphans: bool) -> dict:
    return prune_checkpoints(retention_days=retention_days, delete_orphans=not keep_orphans)


def cmd_clear_legacy() -> str:
    result = clear_legacy()
    return f"deleted {result['deleted']} archive(s)"


def cmd_clear() -> str:
    result = clear_all()
    return f"cleared: {result['deleted']}"
