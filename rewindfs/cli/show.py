"""`rewind show`: one checkpoint's metadata, agent steps, state documents and external actions."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from rewindfs.agent.show import checkpoint_report
from rewindfs.cli.app import App

PREVIEW = 160  # characters of a state document shown without --full
SHOW_PATHS = 10


@click.command()
@click.argument("reference", default="latest")
@click.option("-C", "--dir", "directory", type=click.Path(),
              help="Project directory (default: the project around the cwd).")
@click.option("--full", is_flag=True, help="State documents in full, pretty-printed.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def show(app: App, reference: str, directory: str | None, full: bool, as_json: bool) -> None:
    """Show checkpoint REFERENCE (number, hash, label or latest) in detail."""
    report = checkpoint_report(app.store, app.project_dir(directory), reference)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for line in format_report(report, full):
        click.echo(line)


def format_report(r: dict[str, Any], full: bool = False) -> list[str]:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["time"]))
    lines = [f"checkpoint {r['number']} of {r['directory']}: {r['hash']}",
             f"  time:     {when}",
             f"  reason:   {r['reason']}"]
    if r["labels"]:
        lines.append(f"  labels:   {', '.join(r['labels'])} (pinned: never pruned automatically)")
    if r["step_id"] or r["turn_id"]:
        lines.append(f"  step:     {r['step_id']} of turn {r['turn_id']} ({r['phase']})")
    files = r["files_changed"]
    lines.append(f"  changes:  {files} file{'s' if files != 1 else ''}, "
                 f"+{r['insertions']}/-{r['deletions']} since the previous checkpoint")
    if r["steps"]:
        lines.append("  steps:")
        for s in r["steps"]:
            lines.append(f"    {s['step_id']} (turn {s['turn_id']}, {s['status']}): "
                         f"{s['phase']} the step{_changed(s)}")
    if r["state"]:
        lines.append("  state:")
        for name, doc in sorted(r["state"].items()):
            lines.append(f"    {name}: {_document(doc, full)}")
    if r["actions"]:
        lines.append("  external actions since the previous checkpoint:")
        for a in r["actions"]:
            undo = "reversible" if a["reversible"] else "irreversible"
            summary = f": {a['summary']}" if a["summary"] else ""
            lines.append(f"    {a['kind']} #{a['id']}{summary} ({undo})")
    return lines


def _changed(step: dict[str, Any]) -> str:
    if step["phase"] != "after":
        return ""
    paths = step["changed_files"]
    if not paths:
        return "; it changed nothing"
    shown = ", ".join(paths[:SHOW_PATHS]) + (" ..." if len(paths) > SHOW_PATHS else "")
    return f"; changed {shown}"


def _document(doc: Any, full: bool) -> str:
    if full:
        return "\n      ".join(json.dumps(doc, indent=2, ensure_ascii=False).splitlines())
    text = json.dumps(doc, ensure_ascii=False)
    return text if len(text) <= PREVIEW else text[:PREVIEW] + " ..."


COMMANDS = [show]
