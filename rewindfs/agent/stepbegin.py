"""The start of an agent step in the step log: written by StepRecorder.begin after its
checkpoint, and by the agent hooks when store.stamp shows there is nothing to checkpoint
(the step then begins at the newest checkpoint). Small on purpose: the hooks import it on
their fast path."""

from __future__ import annotations

import time
from typing import Any

from rewindfs.errors import InvalidInput

MAX_ID = 200
STEP_TRAILER, TURN_TRAILER, PHASE_TRAILER = "Rewind-Step", "Rewind-Turn", "Rewind-Phase"


def valid_id(value: Any, what: str) -> str:
    text = str(value) if isinstance(value, str | int) else ""
    if not text.strip() or len(text) > MAX_ID or any(ord(ch) < 32 for ch in text):
        raise InvalidInput(f"invalid {what} id {value!r}: 1-{MAX_ID} printable characters")
    return text


def append_begin(log: Any, step_id: str, turn_id: str, tree: str | None,
                 commit: str | None) -> None:
    """Append the begin event to an open store.steplog.StepLog."""
    log.append({"event": "begin", "step": step_id, "turn": turn_id, "time": time.time(),
                "tree": tree, "commit": commit})


def step_trailers(step_id: str, turn_id: str, phase: str) -> dict[str, str]:
    """The trailers of a step's checkpoint, for readers of the history."""
    return {STEP_TRAILER: step_id, TURN_TRAILER: turn_id, PHASE_TRAILER: phase}
