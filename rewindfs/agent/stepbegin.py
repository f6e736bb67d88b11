"""The marks an agent step leaves in the step log: its begin, written by StepRecorder.begin
after its checkpoint and by the agent hooks (also when store.stamp shows there is nothing
to checkpoint: the step then begins at the newest checkpoint), and the hooks' after event,
the state the tool call left (rewindfs.agent.timeline reads them). Small on purpose: the
hooks import it on their fast path.

A step of an agent session names its agent and session, so a revert takes back that
session's steps alone, and the tool call it brackets (`call`: the agent's id of it, or
for an agent that gives none the tool and a digest of its input), so the after event
finds its begin.
"""

from __future__ import annotations

import time
from typing import Any

from rewindfs.errors import InvalidInput

MAX_ID = 200
STEP_TRAILER, TURN_TRAILER, PHASE_TRAILER = "Rewind-Step", "Rewind-Turn", "Rewind-Phase"
AGENT_TRAILER, SESSION_TRAILER = "Rewind-Agent", "Rewind-Session"


def valid_id(value: Any, what: str) -> str:
    text = str(value) if isinstance(value, str | int) else ""
    if not text.strip() or len(text) > MAX_ID or any(ord(ch) < 32 for ch in text):
        raise InvalidInput(f"invalid {what} id {value!r}: 1-{MAX_ID} printable characters")
    return text


def _who(agent: str, session: str, call: str) -> dict[str, str]:
    return {k: v for k, v in (("agent", agent), ("session", session), ("call", call)) if v}


def append_begin(log: Any, step_id: str, turn_id: str, tree: str | None,
                 commit: str | None, agent: str = "", session: str = "",
                 call: str = "", files: list[str] | None = None) -> None:
    """Append the begin event to an open store.steplog.StepLog; `files`: the only
    (project-relative) files the step can change, when known (a write tool's)."""
    log.append({"event": "begin", "step": step_id, "turn": turn_id, "time": time.time(),
                "tree": tree, "commit": commit, **_who(agent, session, call),
                **({} if files is None else {"files": files})})


def append_after(log: Any, agent: str, session: str, call: str, tree: str | None,
                 commit: str | None) -> None:
    """Append a hook's after event: the state once the tool call `call` of that session
    is done (its begin is the oldest step of the session still open for that call)."""
    log.append({"event": "after", "time": time.time(), "tree": tree, "commit": commit,
                **_who(agent, session, call)})


def log_call(log: Any, call: Any, step_id: str, turn_id: str, tree: str | None,
             commit: str | None, root: str) -> None:
    """A hook's tool call (hooks.payloads.ToolCall) in the open log of the project at
    `root`: its begin event, or its after event (phase "after")."""
    if call.phase == "after":
        append_after(log, call.agent, call.session, call.key, tree, commit)
    else:
        append_begin(log, step_id, turn_id, tree, commit, call.agent, call.session, call.key,
                     project_files(call.files, call.cwd, root))


def project_files(files: str, cwd: str, root: str) -> list[str] | None:
    """A write tool's files (`files`: a JSON list, as named from `cwd`) relative to the
    project at `root`, those outside it left out; None when not known."""
    import json
    import os

    try:
        names = json.loads(files) if files else None
    except ValueError:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    base = os.path.realpath(root)
    out = []
    for name in names:
        full = os.path.join(cwd, name)
        parent = os.path.realpath(os.path.dirname(full))
        rel = os.path.relpath(os.path.join(parent, os.path.basename(full)), base)
        if rel != ".." and not rel.startswith(("../", "/")) and rel != ".":
            out.append(rel)
    return out


def step_trailers(step_id: str, turn_id: str, phase: str) -> dict[str, str]:
    """The trailers of a step's checkpoint, for readers of the history."""
    return {STEP_TRAILER: step_id, TURN_TRAILER: turn_id, PHASE_TRAILER: phase}


def session_trailers(agent: str, session: str) -> dict[str, str]:
    """The trailers naming the agent session a checkpoint belongs to."""
    return {k: v for k, v in ((AGENT_TRAILER, agent), (SESSION_TRAILER, session)) if v}
