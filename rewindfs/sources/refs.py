"""References to other agents' steps, as `rewind` commands accept them.

    kilo:3                        the 3rd newest step `rewind list --agent kilo` shows
    kilo:latest                   the newest (= kilo:1)
    kilo:<session>                that session's newest listed step (an id or a prefix)
    kilo:<session>/2.1            turn 2, step 1 of the session (its mount directory)
    kilo:<session>/<step id>      the stable form `--json` gives (`prt_...`)

`opencode:` the same. A step names the project as it was when the step began.
After the reference, `:PATH` names a file in it (`rewind show kilo:3:src/app.py`).
"""

from __future__ import annotations

from rewindfs.errors import InvalidInput, NotFound
from rewindfs.sources.agents import AGENTS, Agent
from rewindfs.sources.history import AgentHistory, Listed

MIN_PREFIX = 6  # characters of a session id that may stand for it


def agent_of(text: str) -> Agent | None:
    """The agent a reference names (`kilo:...`), or None for one of our checkpoints."""
    head, colon, _ = text.partition(":")
    return AGENTS.get(head.lower()) if colon else None


def split(text: str) -> tuple[str, str | None]:
    """(`kilo:3`, `src/app.py`) from `kilo:3:src/app.py`; the path is None without one."""
    head, _, rest = text.partition(":")
    ref, colon, path = rest.partition(":")
    return f"{head}:{ref}", (path if colon else None)


def resolve(history: AgentHistory, text: str) -> Listed:
    """The listed step `text` (`kilo:...`) names in `history`."""
    _, _, body = text.partition(":")
    body = body.strip()
    listed = history.listed
    label = history.agent.label
    if not listed:
        raise NotFound(f"no {label} steps for {history.workdir}")
    if body in ("", "latest"):
        return listed[0]
    if body.isdigit():
        number = int(body)
        if 1 <= number <= len(listed):
            return listed[number - 1]
        raise NotFound(f"no {history.agent.name}:{number}: {label} has {len(listed)} "
                       f"step(s) for {history.workdir}")
    session_text, slash, step_text = body.partition("/")
    if not slash:
        for item in listed:  # a bare step id
            if item.step.id == session_text:
                return item
        if not _looks_like_session(session_text):
            raise InvalidInput(f"invalid {history.agent.name} reference {text!r} (use a "
                               f"number from `rewind list --agent {history.agent.name}` or "
                               "SESSION/STEP)")
    session = _session(history, session_text, text)
    mine = [item for item in listed if item.session.id == session]
    if not slash:
        if not mine:
            raise NotFound(f"{label} session {session} changed nothing in {history.workdir}")
        return mine[0]
    for item in mine:
        if step_text in (item.step.id, item.step.name):
            return item
    raise NotFound(f"no step {step_text!r} in {label} session {session} "
                   f"(`rewind list --agent {history.agent.name}` lists them)")


def _looks_like_session(text: str) -> bool:
    return text.startswith("ses") or len(text) >= MIN_PREFIX


def _session(history: AgentHistory, text: str, whole: str) -> str:
    ids = [s.id for s in history.sessions]
    if text in ids:
        return text
    matches = [i for i in ids if len(text) >= MIN_PREFIX and i.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise InvalidInput(f"{whole!r} is ambiguous: {len(matches)} sessions start with {text!r}")
    raise NotFound(f"no {history.agent.label} session {text!r} for {history.workdir}")
