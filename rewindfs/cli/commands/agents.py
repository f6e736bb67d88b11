"""Other agents' steps on the command line: `rewind list --agent`, `rewind import`, and
the `kilo:3` / `opencode:...` references `show`, `cat`, `log`, `diff` and `restore`
accept (each of those commands hands such a reference here)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from rewindfs import store as st
from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option, json_option
from rewindfs.cli.output import logtable, rowstream
from rewindfs.cli.output.feedback import capture_progress
from rewindfs.cli.output.human import human_age, visible
from rewindfs.errors import InvalidInput
from rewindfs.sources import keep, reading, refs
from rewindfs.sources.agents import AGENTS, agent_named
from rewindfs.sources.history import AgentHistory, Listed, load
from rewindfs.sources.refs import split as split_step  # noqa: F401 - for cli.commands.show
from rewindfs.sources.stepref import is_step
from rewindfs.store.history import quote_path
from rewindfs.store.objects import writers

SHOW_FILES = 3  # file names shown per step in a listing


def history_for(app: App, workdir: Path, agent: str) -> AgentHistory:
    found = load(agent_named(agent), workdir)
    if found.skipped:
        app.term.warn(f"skipped {len(found.skipped)} unreadable {found.agent.label} "
                      f"record(s): {', '.join(found.skipped[:3])}"
                      + (" ..." if len(found.skipped) > 3 else ""))
    return found


def resolve(app: App, workdir: Path, text: str) -> tuple[AgentHistory, Listed]:
    """`kilo:3` -> the agent's history of the project and the step."""
    agent = refs.agent_of(text)
    if agent is None:
        raise InvalidInput(f"{text!r} is not a step of another agent")
    history = history_for(app, workdir, agent.name)
    return history, refs.resolve(history, text)


def list_steps(app: App, workdir: Path, agent: str, as_json: bool) -> None:
    history = history_for(app, workdir, agent)
    entries = [reading.entry(history, item) for item in history.listed]
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    with app.term.paged() as console:
        label = history.agent.label
        if not entries:
            console.print(visible(f"No {label} steps changed {workdir}"), soft_wrap=True)
            return
        console.print(Text(visible(f"{label} steps for {workdir} (restore one with `rewind "
                                   f"restore {agent}:N`):"), style="bold"), soft_wrap=True)
        if history.moved_from:  # (the agent's database says where: written out)
            console.print(visible(f"  ({label} recorded it at {history.moved_from})"),
                          soft_wrap=True)
        table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
        for justify in ("right", "left", "right", "left", "left", "left"):
            table.add_column(justify=justify, no_wrap=justify == "right")
        for item, data in zip(history.listed, entries, strict=True):
            title = _short(item.session.title or item.session.id)
            where = Text(visible(f"{title} {item.step.name}"), style="cyan")
            table.add_row(Text(f"  {item.number}."), Text(item.short_ref, style="yellow"),
                          Text(human_age(item.step.time), style="green"), where,
                          Text(item.turn.excerpt or "", style="dim"), _files(data))
        app.term.print_table(table, console)


def _short(text: str, width: int = 24) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _files(data: dict) -> Text:
    if data["gone"]:
        return Text("gone (pruned by the agent's gc)", style="red")
    files = data["files"]
    if not files:
        return Text("(start of turn)", style="dim")
    shown = ", ".join(quote_path(f) for f in files[:SHOW_FILES])
    more = f" +{len(files) - SHOW_FILES} more" if len(files) > SHOW_FILES else ""
    return Text(shown + more)


def show_step(app: App, workdir: Path, text: str, as_json: bool) -> None:
    history, item = resolve(app, workdir, text)
    data = reading.entry(history, item)
    change = None if data["gone"] else reading.step_diff(history, item)
    if change is not None:
        data.update(files_changed=change.files_changed, insertions=change.insertions,
                    deletions=change.deletions)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(item.step.time))
    lines = [f"{history.agent.label} step {item.short_ref} of {workdir}: {item.ref}",
             f"  time:     {when} ({human_age(item.step.time)})",
             visible(f"  session:  {item.session.title or '(untitled)'} ({item.session.id})"),
             f"  turn:     {item.turn.number}: {item.turn.excerpt or '(no prompt)'}",
             f"  step:     {item.step.name} (the project as this step found it)",
             f"  mount:    <mount>/{agent_dir(item)}/"]
    if data["gone"]:
        lines.append(f"  state:    {reading.gone_message(history, item)}")
    elif change is not None:
        lines.append(f"  changes:  {change.files_changed} file(s), +{change.insertions}/"
                     f"-{change.deletions} by this step: {', '.join(change.names[:10])}")
    if item.step.reverted:
        lines.append(f"  reverted: {history.agent.label} has a pending revert hiding it")
    for line in lines:
        click.echo(line)


def read_step_file(app: App, workdir: Path, text: str, path: bytes) -> bytes:
    history, item = resolve(app, workdir, text)
    return reading.read_file(history, item, path)


def log_path(app: App, workdir: Path, agent: str | None, reference: str | None, rel: bytes,
             as_json: bool) -> None:
    """`rewind log --agent kilo PATH` / `rewind log kilo:4 PATH`."""
    if reference:
        history, upto = resolve(app, workdir, reference)
        if agent and agent != history.agent.name:
            raise click.UsageError(f"--agent {agent} and {reference} name different agents")
    else:
        history, upto = history_for(app, workdir, agent or ""), None
    found, gone = reading.path_log(history, rel, upto)
    if gone:
        app.term.warn(f"{gone} {history.agent.label} step(s) are gone (pruned by its gc) "
                      "and were not looked at")
    if as_json:
        click.echo(json.dumps([{**reading.entry(history, c.item), "status": c.status,
                                "insertions": c.added, "deletions": c.deleted,
                                "binary": c.binary} for c in found], indent=2))
        return
    with app.term.paged() as console:
        if not found:
            console.print(f"{quote_path(rel)} was changed by no {history.agent.label} step",
                          soft_wrap=True)
            return
        now = time.time()
        rows = [[rowstream.cell(f"  {c.item.number}."),
                 rowstream.cell(c.item.short_ref, "yellow"),
                 rowstream.cell(human_age(c.item.step.time, now), "green"),
                 rowstream.cell(c.status), logtable.line_counts(c.binary, c.added, c.deleted),
                 rowstream.cell(f"{c.item.step.name} {c.item.turn.excerpt}", "dim")]
                for c in found]
        logtable.print_log(app.term, console,
                           f"{quote_path(rel)} in {workdir}, {history.agent.label} steps:", rows)


@contextmanager
def diff_trees(app: App, workdir: Path, given: tuple[str, ...]
               ) -> Iterator[tuple[object, str, str]]:
    """(repository, old tree, new tree) for `rewind diff` when a reference is a step:
    two steps of one agent are compared in its snapshots; anything else in the store,
    with the steps copied in (and the working tree captured, when NEW is not given)."""
    resolved = [resolve(app, workdir, text) if is_step(text) else None for text in given]
    steps = [r for r in resolved if r is not None]
    if len(given) == 2 and len(steps) == 2 and steps[0][0].agent == steps[1][0].agent:
        history = steps[0][0]
        yield (history.objects.repo, reading.state_tree(history, steps[0][1]),
               reading.state_tree(history, steps[1][1]))
        return
    store = app.store
    with ExitStack() as stack:
        trees = []
        for text, found in zip(given, resolved, strict=True):
            if found is None:
                trees.append(st.resolve(store.repo, st.project_hash(workdir), text).tree_id)
            else:
                trees += stack.enter_context(reading.in_store(store, found[0], [found[1]]))
        if len(trees) < 2:
            with capture_progress(app.term, "reading the working tree"):
                trees.append(st.working_tree_tree(store, workdir, app.limits,
                                                  app.extra_excludes))
        yield store.repo, trees[0], trees[1]


@contextmanager
def restore_target(app: App, workdir: Path, text: str, revert: bool
                   ) -> Iterator[tuple[st.Checkpoint, list[bytes] | None,
                                       dict[bytes, list[tuple[str, str]]]]]:
    """The checkpoint `rewind restore kilo:3` restores to (and, with --revert, the paths it
    reverts and the files it keeps: another session changed them too); the copied tree is
    kept from gc until the block ends."""
    from rewindfs.restore import foreign

    history, item = resolve(app, workdir, text)
    store = app.store
    store.ensure()
    with writers.writing(store.layout):
        if revert:
            yield foreign.revert_from(store, history, item)
        else:
            yield foreign.to_step(store, history, item), None, {}


def agent_dir(item: Listed) -> str:
    return f"{item.agent}/<project>/{item.path}"


@click.command("import", epilog=examples(
    "rewind import kilo                  # every Kilo Code session of this project",
    "rewind import opencode --session ses_3a1f...",
    "rewind import kilo --json",
))
@click.argument("agent", type=click.Choice(sorted(AGENTS)), metavar="kilo|opencode")
@click.option("--session", "sessions", multiple=True, metavar="ID",
              help="Only this session (an id or its first characters; repeatable).")
@click.option("--all", "import_all", is_flag=True,
              help="Every session of the project (the default).")
@dir_option
@json_option
@click.pass_obj
def import_(app: App, agent: str, sessions: tuple[str, ...], import_all: bool,
            directory: str | None, as_json: bool) -> None:
    """Copy AGENT's snapshots of the project into the store as labelled checkpoints.

    Every step `rewind list --agent AGENT` shows becomes a checkpoint labelled
    AGENT-SESSION-TURN.STEP, and each session's last state one labelled
    AGENT-SESSION-end, so the agent's own `git gc` can no longer lose them.
    Importing again adds only what is new.
    """
    if sessions and import_all:
        raise click.UsageError("--session and --all cannot be used together")
    workdir = app.project_dir(directory)
    history = history_for(app, workdir, agent)
    chosen = {refs.resolve(history, f"{agent}:{s}").session.id for s in sessions} or None
    result = keep.import_history(app.store, history, chosen)
    if as_json:
        click.echo(json.dumps({"directory": str(workdir), "agent": agent,
                               "created": [{"label": label, "hash": commit}
                                           for label, commit in result.created],
                               "kept": result.kept, "gone": result.gone,
                               "objects": result.objects, "bytes": result.bytes}, indent=2))
        return
    label = history.agent.label
    click.echo(visible(f"imported {len(result.created)} {label} snapshot(s) of {workdir} "
                       f"({len(result.kept)} already there)"))
    for name, why in result.gone.items():
        app.term.warn(f"{name}: gone ({why})")
    if result.created:
        click.echo("  `rewind list` shows them labelled " + ", ".join(
            name for name, _ in result.created[:3]) + (" ..." if len(result.created) > 3
                                                       else ""))


COMMANDS = [import_]
