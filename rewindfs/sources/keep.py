"""Keeping another agent's snapshots past its gc: `rewind import kilo|opencode`.

Every listed step becomes a labelled checkpoint of the project (the tree it
started from), and each session's final state one more (the tree its last step
finished with), so nothing the agent's snapshots hold for the project is lost
when its `git gc --prune=7.days` runs. Labels:

    kilo-<session id>-2.1      before turn 2, step 1 of that session
    kilo-<session id>-end      the session's last state

Importing again adds only what is new (store.foreign.imports).
"""

from __future__ import annotations

from rewindfs.sources.history import AgentHistory, Listed
from rewindfs.sources.model import Session, excerpt
from rewindfs.store import Store
from rewindfs.store.foreign import Imported, Snapshot, keep

AGENT_TRAILER, SESSION_TRAILER = "Rewind-Agent", "Rewind-Session"
TURN_TRAILER, STEP_TRAILER, PHASE_TRAILER = "Rewind-Turn", "Rewind-Step", "Rewind-Phase"


def label_of(agent: str, session: str, what: str) -> str:
    return f"{agent}-{session}-{what}"


def snapshots(history: AgentHistory, sessions: set[str] | None = None) -> list[Snapshot]:
    """What an import keeps: the listed steps of the sessions (all when None), and each
    session's end."""
    out: list[Snapshot] = []
    by_session: dict[str, list[Listed]] = {}
    for item in history.listed:
        if sessions is None or item.session.id in sessions:
            by_session.setdefault(item.session.id, []).append(item)
    for items in by_session.values():
        for item in items:
            out.append(_before(history, item))
        end = _end(history, items[0].session)
        if end is not None:
            out.append(end)
    return out


def import_history(store: Store, history: AgentHistory,
                   sessions: set[str] | None = None) -> Imported:
    return keep(store, history.workdir, history.objects, snapshots(history, sessions))


def _trailers(agent: str, session: Session, turn: int | str, step: str, phase: str
              ) -> dict[str, str]:
    return {AGENT_TRAILER: agent, SESSION_TRAILER: session.id, TURN_TRAILER: str(turn),
            STEP_TRAILER: step, PHASE_TRAILER: phase}


def _before(history: AgentHistory, item: Listed) -> Snapshot:
    agent, session, step = history.agent.name, item.session, item.step
    prompt = f" (turn {item.turn.number}: {excerpt(item.turn.prompt, 40)})" \
        if item.turn.prompt else ""
    return Snapshot(
        tree=step.start_tree, label=label_of(agent, session.id, step.name),
        reason=f"{agent}: before step {step.name} of {_title(session)}{prompt}",
        time=step.time, chain=session.id,
        trailers=_trailers(agent, session, item.turn.number, step.name, "before"),
        subtree=history.prefix(session))


def _end(history: AgentHistory, session: Session) -> Snapshot | None:
    finished = [s for s in session.steps if s.finish_tree]
    if not finished:
        return None
    last = finished[-1]
    agent = history.agent.name
    return Snapshot(
        tree=last.finish_tree or "", label=label_of(agent, session.id, "end"),
        reason=f"{agent}: end of {_title(session)} (after step {last.name})",
        time=last.finish_time or last.time, chain=session.id,
        trailers=_trailers(agent, session, last.turn, last.name, "after"),
        subtree=history.prefix(session))


def _title(session: Session) -> str:
    return f"session {excerpt(session.title, 40)!r}" if session.title else f"session {session.id}"
