"""Whether a reference names another agent's step (`kilo:3`, `opencode:ses_4:2`) rather
than one of rewindfs's checkpoints, from the agents' names alone: a command handed one of
ours never imports the agents' readers (SQLite, JSON stores)."""

from __future__ import annotations

AGENT_NAMES = frozenset({"kilo", "opencode"})  # sources.agents.AGENTS holds each of them


def is_step(text: str | None) -> bool:
    head, colon, _ = (text or "").partition(":")
    return bool(colon) and head.lower() in AGENT_NAMES
