"""`rewind show`: one checkpoint's metadata, agent steps, state documents and external actions."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from rewindfs import store as st
from rewindfs.agent.show import checkpoint_report
from rewindfs.cli.app import App
from rewindfs.cli.commands.complete import complete_reference
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option, json_option, output_options, refuse_together
from rewindfs.cli.output import leftout as left_out
from rewindfs.cli.output.human import visible
from rewindfs.cli.target import Target, remote_option
from rewindfs.cli.target import resolve as resolve_target
from rewindfs.errors import InvalidInput, RewindError
from rewindfs.restore.paths import project_relative
from rewindfs.sources.stepref import is_step
from rewindfs.store.history import leftout, pathlog, resolve_with_path, timeref

PREVIEW = 160  # characters of a state document shown without --full
SHOW_PATHS = 10


@click.command(epilog=examples(
    "rewind show                 # the newest checkpoint: time, reason, changes, steps, state",
    "rewind show 3 --json",
    "rewind show 3:src/app.py    # the file src/app.py as it was in checkpoint 3",
    "rewind show @yesterday-14:00:README.md",
))
@click.argument("reference", default="latest", metavar="[REF | REF:PATH]",
                shell_complete=complete_reference)
@dir_option
@click.option("--full", is_flag=True, help="State documents in full, pretty-printed.")
@remote_option
@json_option
@output_options
@click.pass_obj
def show(app: App, reference: str, directory: str | None, full: bool, remote: str | None,
         as_json: bool) -> None:
    """Show checkpoint REF (number, id, label, time; default latest) in detail, or with
    REF:PATH print that file as it was (PATH from the project root, `./` for the cwd)."""
    target = resolve_target(app, directory, remote, reference.partition(":")[0])
    workdir = target.workdir
    if is_step(reference):
        refuse_together(**{"a kilo:/opencode: step": True, "--remote": remote})
        from rewindfs.cli.commands import agents  # (their readers: only for their steps)

        ref, path = agents.split_step(reference)
        if path is None:
            agents.show_step(app, workdir, ref, as_json)
        else:
            rel = _ref_path(app, workdir, path)
            if not rel:
                raise InvalidInput(f"no path after the colon in {reference!r} (REF:PATH)")
            _print_file(app, agents.read_step_file(app, workdir, ref, rel))
        return
    if ":" in reference and not as_json and not _is_reference(app, target.key, reference):
        _show_file(app, target, reference)
        return
    report = checkpoint_report(app.store, workdir, reference,
                               target.key if target.fetched else None)
    found, total = left_out.of(report["trailers"])
    report.update(left_out=left_out.as_json(found), left_out_count=total)
    if target.fetched:
        report.update(target.describe())
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for line in format_report(report, full):
        click.echo(line)


def _is_reference(app: App, key: str, text: str) -> bool:
    """Whether `text` as a whole names a checkpoint (a time such as `14:00` has colons)."""
    if not app.store.exists():
        return True  # let checkpoint_report say there are none
    try:
        st.resolve(app.store.repo, key, text)
        return True
    except RewindError:
        try:
            return timeref.parse(text) is not None  # a time with no checkpoint: say so
        except RewindError:
            return False


def _ref_path(app: App, workdir: Path, path: str) -> bytes:
    """PATH of REF:PATH: from the project root, or from the cwd when it starts `./`."""
    from rewindfs.cli.app import cli_relative

    if path.startswith(("./", "../")):
        return cli_relative(workdir, path)
    return project_relative(path, workdir, cwd=workdir)


def _show_file(app: App, target: Target, text: str) -> None:
    repo, h16 = app.store.repo, target.key
    cp, rel = resolve_with_path(repo, h16, text, lambda p: _ref_path(app, target.workdir, p))
    if not rel:
        raise InvalidInput(f"no path after the colon in {text!r} (REF:PATH)")
    _print_file(app, pathlog.read_file(repo, cp, rel))


def _print_file(app: App, data: bytes) -> None:
    from rewindfs.cli.commands.files import write_bytes

    if not app.term.pager or not sys.stdout.isatty():
        write_bytes(data)
        return
    with app.term.paged() as console:
        console.file.write(data.decode("utf-8", "surrogateescape"))


def format_report(r: dict[str, Any], full: bool = False) -> list[str]:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["time"]))
    which = f"checkpoint {r['number']}" if r["number"] else "pre-rollback snapshot"
    lines = [f"{which} of {r['directory']}: {r['hash']}",
             f"  time:     {when}",
             f"  reason:   {r['reason']}"]
    if r["labels"]:
        lines.append(f"  labels:   {', '.join(r['labels'])} (pinned: never pruned automatically)")
    if r["step_id"] or r["turn_id"]:
        lines.append(f"  step:     {r['step_id']} of turn {r['turn_id']} ({r['phase']})")
    if r.get("agent") or r.get("session"):
        lines.append(f"  agent:    {r.get('agent') or '-'}, session {r.get('session') or '?'}")
    files = r["files_changed"]
    lines.append(f"  changes:  {files} file{'s' if files != 1 else ''}, "
                 f"+{r['insertions']}/-{r['deletions']} since the previous checkpoint")
    if r["steps"]:
        lines.append("  steps:")
        for s in r["steps"]:
            of = f", session {s['session']}" if s.get("session") else ""
            lines.append(f"    {s['step_id']} (turn {s['turn_id']}{of}, {s['status']}): "
                         f"{s['phase']} the step{_changed(s)}")
    if r["state"]:
        lines.append("  state:")
        for name, doc in sorted(r["state"].items()):
            lines.append(f"    {name}: {_document(doc, full)}")
    lines += left_out.lines([leftout.LeftOut(e["kind"], e["path"], e["size"])
                             for e in r["left_out"]], r["left_out_count"],
                            "left out: {count} file(s) left out of this checkpoint (no "
                            "restore brings them back):")
    if r.get("git"):
        from rewindfs.store.projectgit import summary

        lines += [f"  {line}" for line in summary.lines(r["git"])]
    if r["actions"]:
        lines.append("  external actions since the previous checkpoint:")
        for a in r["actions"]:
            undo = "reversible" if a["reversible"] else "irreversible"
            summary = f": {a['summary']}" if a["summary"] else ""
            lines.append(f"    {a['kind']} #{a['id']}{summary} ({undo})")
    # A fetched checkpoint's texts are its pusher's: shown, never obeyed.
    return ["\n".join(visible(part) for part in line.split("\n")) for line in lines]


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
