"""`rewind config` and `rewind status`: the settings in force, what the base holds (read only).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from rewindfs import config
from rewindfs.cli.help import examples
from rewindfs.cli.output.human import (
    SHOW,
    human_age,
    human_bytes,
    human_date,
    human_span,
    setting_text,
    visible,
)

if TYPE_CHECKING:  # `rewind config` needs none of the store (each command imports its own)
    from rewindfs.cli.app import App
    from rewindfs.store.maintenance import StoreStatus
    from rewindfs.store.objects import Layout


def _table(header: Sequence[str], rows: list[Sequence[str]], right: set[int]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    def line(row: Sequence[str]) -> str:
        cells = [str(c).rjust(w) if i in right else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return "  " + "  ".join(cells).rstrip()
    return [line(header), *(line(r) for r in rows)]


@click.command("config", epilog=examples(
    "rewind config                       # each setting, its value and where it came from",
    "REWIND_MAX_SNAPSHOTS=50 rewind config --json",
))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def config_(app: App, as_json: bool) -> None:
    """Show every setting, its effective value and where it came from."""
    s = app.settings
    values = dict(s.values)
    values["mountpoint"] = str(s.mount_dir)  # the effective one, also when defaulted
    if as_json:
        click.echo(json.dumps({"home": str(s.home), "config_file": str(s.home / "config.yaml"),
                               "settings": {k: {"value": _plain(values[k]), "source": s.sources[k]}
                                            for k in config.KEYS}}, indent=2))
        return
    file = s.home / "config.yaml"
    click.echo(f"config file: {file}{'' if file.exists() else ' (not found)'}")
    click.echo("environment: REWIND_<KEY> (e.g. REWIND_MAX_SNAPSHOTS)")
    rows = [(k, setting_text(values[k]), s.sources[k]) for k in config.KEYS]
    for line in _table(("KEY", "VALUE", "SOURCE"), rows, set()):
        click.echo(line)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@click.command(epilog=examples(
    "rewind status                       # sizes, projects, mount, next automatic prune",
    "rewind status --limit 0 --json",
))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="Projects listed (0 = all).")
@click.pass_obj
def status(app: App, as_json: bool, limit: int) -> None:
    """Sizes of the checkpoint base, its projects and legacy archives, and the mount."""
    from rewindfs.store.maintenance import store_status
    from rewindfs.store.objects import Layout, odbguard

    s = app.settings
    info = store_status(Layout(s.base), s.retention_days,
                        cap_bytes=s.max_total_size_mb * 1024 * 1024)
    mount = _mount_state(s.mount_dir)
    schedule = _auto_prune(s, info.last_prune)
    unfinished = _unfinished_restores(Layout(s.base), info)
    held: dict[str, list[dict]] = {"remotes": [], "fetched_projects": []}
    if _has_remotes(Layout(s.base)):  # (the remotes' code loads only for a store with some)
        from rewindfs.cli.commands.remote import remote_lines, remote_status

        held = remote_status(app)
    if as_json:
        click.echo(json.dumps({**info.to_dict(), "mount": mount, "auto_prune": schedule,
                               "unfinished_restores": unfinished, **held,
                               "libgit2": odbguard.describe()}, indent=2))
        return
    for line in _status_lines(info, mount, schedule, limit):
        click.echo(visible(line))  # projects' paths: written out, never obeyed
    if held["remotes"]:
        for line in remote_lines(held, s.auto_push):
            click.echo(line)
    for item in unfinished:
        click.echo(visible(f"Unfinished {item['kind']} of {item['workdir']} to "
                           f"{item['target'][:8]} ({item['state']} {human_age(item['time'])}): "
                           f"`{item['undo']}` puts back the files as they were before it"))
    click.echo(f"libgit2: {odbguard.describe()}")


def _unfinished_restores(layout: Layout, info: StoreStatus) -> list[dict[str, Any]]:
    """Restores that died midway (killed or interrupted), per project: how to undo them."""
    from rewindfs.restore import journal

    out = []
    admins = os.fspath(layout.store / "worktrees")
    for p in info.projects:
        # A plain existence test first: most projects never restored (no journal yet).
        if not p.workdir or not os.path.exists(f"{admins}/{p.hash}/{journal.FILE_NAME}"):
            continue
        entry = journal.unfinished(journal.path_for(layout, p.hash))
        if entry is not None:
            out.append({"workdir": p.workdir, "hash": p.hash, "kind": entry.kind,
                        "target": entry.target, "pre_rollback": entry.pre_rollback,
                        "time": entry.time, "state": entry.status or "killed",
                        "undo": f"rewind undo -C {shlex.quote(p.workdir)}"})
    return out


def _auto_prune(s: config.Settings, last: float | None) -> dict[str, Any]:
    """When the agent API's automatic sweep runs next (a new store counts as swept)."""
    if not s.auto_prune:
        return {"enabled": False, "next": None}
    due = (last or 0) + s.min_interval_hours * 3600
    return {"enabled": True, "next": max(due, time.time()) if last else None}


def _has_remotes(layout) -> bool:
    """Whether the store knows a remote (store.remote.remotes keeps one file each)."""
    try:
        return any(name.endswith(".json") for name in os.listdir(layout.remotes_dir))
    except OSError:
        return False


def _mount_state(path) -> dict[str, Any]:
    from rewindfs.fs import lifecycle

    state = lifecycle.mount_state(path)
    mode = lifecycle.mount_mode(path) if state is lifecycle.MountState.MOUNTED else None
    return {"path": str(path), "state": state.value, "type": lifecycle.mounted_type(path),
            "mode": mode}


def _status_lines(info: StoreStatus, mount: dict[str, Any], schedule: dict[str, Any],
                  limit: int) -> list[str]:
    reclaim = "?" if info.reclaimable_bytes is None else human_bytes(info.reclaimable_bytes)
    deleted = [p for p in info.projects if p.state in ("deleted", "orphan")]
    lines = [
        f"Checkpoint base: {info.base}",
        f"Total size:      {human_bytes(info.total_size_bytes)}",
        f"  store/         {human_bytes(info.store_size_bytes)}",
        f"  legacy-*       {human_bytes(info.legacy_size_bytes)}",
        f"Reclaimable:     {reclaim} (freed now by rewind prune)",
        *_cap_lines(info),
        f"Projects:        {info.project_count}"
        + (f" ({len(deleted)} deleted)" if deleted else ""),
        f"Mount:           {mount['state']} ({mount['path']})"
        + (f", {mount['mode']}" if mount.get("mode") else ""),
        f"Auto prune:      {_schedule_text(schedule)}",
    ]
    shown = info.projects if not limit else info.projects[:limit]
    if shown:
        rows = [(visible(str(p.workdir)) if p.workdir else f"(no record: {p.hash})",
                 str(p.checkpoints),
                 human_age(p.last_touch),
                 "?" if p.size_bytes is None else human_bytes(p.size_bytes), _state_text(p))
                for p in shown]
        lines += ["", *_table(("WORKDIR", "CHECKPOINTS", "LAST TOUCH", "SIZE", "STATE"), rows,
                              {1, 2, 3})]
        if len(shown) < len(info.projects):
            lines.append(f"  ... and {len(info.projects) - len(shown)} more (--limit 0)")
        lines.append("  SIZE: bytes only that project holds (freed if it were removed)")
    if deleted:
        lines += ["", "Deleted projects keep their history until their quarantine ends:"]
        for p in deleted[:SHOW]:
            until = "the next sweep" if p.state == "orphan" else \
                human_date(p.quarantine_until) if p.quarantine_until else "rewind prune removes it"
            lines.append(f"  {p.workdir}  deleted since {human_date(p.deleted_at)}, "
                         f"kept until {until}")
        lines += ["  Restore one elsewhere: rewind restore latest --to DIR -C OLD_PATH",
                  "  Moved it?             rewind adopt OLD_PATH NEW_PATH"]
    if info.pre_v2_projects:
        lines += ["", f"Pre-v2 Hermes repositories ({len(info.pre_v2_projects)}), "
                      "pruned in place:"]
        lines += [f"  {r.path}  ({r.workdir or 'no HERMES_WORKDIR'}"
                  f"{'' if r.exists else ', missing'})" for r in info.pre_v2_projects[:SHOW]]
    if info.legacy_archives:
        lines += ["", f"Legacy archives ({len(info.legacy_archives)}):"]
        lines += [f"  {a.name:<40}  {human_bytes(a.size_bytes):>10}"
                  for a in info.legacy_archives]
        lines.append("Clear with: rewind clear-legacy")
    return lines


def _cap_lines(info: StoreStatus) -> list[str]:
    """The size cap, what is held against it, and what the last pruning to it dropped."""
    cap = (f"{human_bytes(info.cap_bytes)} (max_total_size_mb), objects now "
           f"{human_bytes(info.cap_size_bytes)}" if info.cap_bytes else
           f"none (max_total_size_mb: 0), objects now {human_bytes(info.cap_size_bytes)}")
    lines = [f"Size cap:        {cap}"]
    last = info.last_pruning
    if not last:
        return [*lines, "Last pruning:    none"]
    count = last["dropped_count"]
    went = f"{count} checkpoint{'' if count == 1 else 's'} dropped" if count else \
        "no checkpoint dropped"
    lines.append(f"Last pruning:    {human_age(last['ended'])}, {last['by']}: {went} "
                 f"({visible(last['why'])}), {human_bytes(last['freed_bytes'])} freed")
    per_project: dict[str, list[float]] = {}
    for d in last["dropped"]:
        per_project.setdefault(d["workdir"] or f"(no record: {d['project']})", []).append(
            d["time"])
    for workdir, times in list(per_project.items())[:SHOW]:
        lines.append(f"                 {visible(workdir)}: {len(times)} (taken "
                     f"{human_date(min(times))} to {human_date(max(times))})")
    if last.get("left_over"):
        lines.append(f"                 {human_bytes(last['after_bytes'])} left: "
                     f"{visible(last['left_over'])}")
    return lines


def _state_text(p) -> str:
    if p.state == "deleted" and p.deleted_at:
        return f"deleted since {human_date(p.deleted_at)}"
    return p.state


def _schedule_text(schedule: dict[str, Any]) -> str:
    if not schedule["enabled"]:
        return "off (auto_prune: false)"
    wait = (schedule["next"] or 0) - time.time()
    return "due at the next agent checkpoint" if wait < 1 else f"next in {human_span(wait)}"


COMMANDS = [config_, status]
