"""`kilo:N` / `opencode:N` references (Kilo Code's and OpenCode's own snapshots) in the MCP
tools, read and restored through the readers `rewind show/cat/restore` use (sources,
restore.foreign)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rewindfs import store as st
from rewindfs.errors import InvalidInput
from rewindfs.mcpserver import sizing
from rewindfs.sources import reading, refs
from rewindfs.sources.agents import agent_named
from rewindfs.sources.history import AgentHistory, Listed, load
from rewindfs.store.objects import writers


def resolve(workdir: Path, text: str) -> tuple[AgentHistory, Listed]:
    agent = refs.agent_of(text)
    if agent is None:
        raise InvalidInput(f"{text!r} is not a step of another agent")
    history = load(agent_named(agent.name), workdir)
    return history, refs.resolve(history, text)


def read_file(workdir: Path, text: str, path: bytes) -> bytes:
    history, item = resolve(workdir, text)
    return reading.read_file(history, item, path)


def show(workdir: Path, text: str) -> str:
    history, item = resolve(workdir, text)
    data = reading.entry(history, item)
    lines = [f"{history.agent.label} step {item.short_ref} ({item.ref}) of {workdir}: the "
             f"project as step {item.step.name} found it",
             f"  session: {sizing.one_line(item.session.title or '(untitled)')} "
             f"({item.session.id}), turn {item.turn.number}: "
             f"{sizing.one_line(item.turn.excerpt or '(no prompt)')}"]
    if data["gone"]:
        lines.append(f"  gone: {reading.gone_message(history, item)}")
        return "\n".join(lines)
    change = reading.step_diff(history, item)
    if change is not None:
        lines.append(f"  this step changed {change.files_changed} file(s), "
                     f"+{change.insertions}/-{change.deletions}:")
        lines += [f"    {sizing.clean(name)}" for name in sizing.capped(change.names)]
    return "\n".join(lines)


@contextmanager
def restore_target(store: st.Store, workdir: Path, text: str) -> Iterator[st.Checkpoint]:
    """The checkpoint a restore to step `text` restores to; the copied tree is kept from
    gc until the block ends (as `rewind restore kilo:3`)."""
    from rewindfs.restore import foreign

    history, item = resolve(workdir, text)
    store.ensure()
    with writers.writing(store.layout):
        yield foreign.to_step(store, history, item)


@contextmanager
def tree_of(store: st.Store, workdir: Path, text: str) -> Iterator[str]:
    """The step's tree, copied into the store for a diff against it."""
    history, item = resolve(workdir, text)
    with reading.in_store(store, history, [item]) as trees:
        yield trees[0]
