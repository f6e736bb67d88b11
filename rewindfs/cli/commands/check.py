"""`rewind check`: verify the store; `--repair` fixes what is safe to fix."""

from __future__ import annotations

import json
import sys

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.cli.output.human import visible
from rewindfs.store.objects import Layout, lastcheck, odbguard
from rewindfs.store.objects import check as checker

SHOWN = 12  # problems listed per group, so the report fits one screen


@click.command(epilog=examples(
    "rewind check              # report only; changes nothing",
    "rewind check --repair     # then fix what is safe to fix, and check again",
    "rewind check --json       # every problem, for scripts",
))
@click.option("--repair", is_flag=True,
              help="Also fix what can be fixed without losing anything (stat caches, "
                   "stale locks and caches, admin dirs), and list damaged objects for the "
                   "next checkpoint to write again.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@click.pass_obj
def check(app: App, repair: bool, as_json: bool) -> None:
    """Verify the store: objects, packs, refs, indexes, projects, labels, notes, journals.

    Exit status 0 when nothing is damaged, 3 when something is.
    """
    layout = Layout(app.settings.base)
    report = checker.verify(layout)
    repaired: list[checker.Problem] = []
    healing = checker.list_for_healing(layout, report) if repair else 0
    if repair and any(p.fix for p in report.problems):
        repaired = checker.repair(report)
        report = checker.verify(layout)
    lastcheck.record(layout, report)
    if as_json:
        click.echo(json.dumps({
            "store": str(layout.store), "libgit2": odbguard.describe(), "counts": report.counts,
            "repaired": [_problem_dict(layout, p) for p in repaired],
            "listed_for_healing": healing,
            "problems": [_problem_dict(layout, p) for p in report.problems],
            "damaged": bool(report.damaged),
        }, indent=2))
    else:
        for line in _lines(layout, report, repaired):
            click.echo(visible(line))  # (a project's path, a damaged file's: written out)
        if healing:
            click.echo(f"listed {healing} damaged object(s) for the next checkpoint to write "
                       "again from a working tree that still holds them")
    sys.exit(3 if report.damaged else 0)


def _lines(layout: Layout, report: checker.Report, repaired: list[checker.Problem]) -> list[str]:
    lines = [f"store: {layout.store}", f"libgit2: {odbguard.describe()}"]
    if not (layout.store / "HEAD").exists() and not report.problems:
        return [*lines, "no checkpoint store yet: nothing to check"]
    counts = ", ".join(f"{n:,} {what}" for what, n in report.counts.items())
    lines.append(f"checked: {counts}")
    if repaired:
        lines.append(f"repaired ({len(repaired)}):")
        lines += _listed(layout, repaired, lambda p: p.repair or "")
    damaged = [p for p in report.problems if not p.harmless]
    fixable = [p for p in report.problems if p.fix is not None]
    if damaged:
        lines.append(f"damaged ({len(damaged)}):")
        lines += _listed(layout, damaged, lambda p: "")
    if fixable:
        lines.append(f"repairable with `rewind check --repair` ({len(fixable)}):")
        lines += _listed(layout, fixable, lambda p: p.repair or "")
    # Harmless but real (a torn log line its readers skip): named, never called clean.
    noticed = [p for p in report.problems if p.harmless and p.fix is None]
    if noticed:
        lines.append(f"noticed, harmless ({len(noticed)}):")
        lines += _listed(layout, noticed, lambda p: "")
    if damaged:
        stuck = len([p for p in damaged if p.fix is None])
        lines.append(f"the store is damaged; {stuck} problem(s) cannot be repaired safely: "
                     "checkpoints that need those files cannot be listed or restored")
    elif report.problems:
        lines.append("no damage (harmless findings only)")
    else:
        lines.append("no problems found")
    return lines


def _listed(layout: Layout, problems: list[checker.Problem], extra) -> list[str]:
    out = []
    for p in problems[:SHOWN]:
        what = f"{p.problem}" + (f" -> {extra(p)}" if extra(p) else "")
        out.append(f"  {_short(layout, p.path)}: {what}")
    if len(problems) > SHOWN:
        out.append(f"  ... and {len(problems) - SHOWN} more (--json lists all)")
    return out


def _problem_dict(layout: Layout, p: checker.Problem) -> dict:
    return {"path": str(p.path), "problem": p.problem, "repair": p.repair,
            "damage": not p.harmless}


def _short(layout: Layout, path) -> str:
    try:
        return str(path.relative_to(layout.store))
    except ValueError:
        return str(path)


COMMANDS = [check]
