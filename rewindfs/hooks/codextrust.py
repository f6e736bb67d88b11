"""Whether Codex will run rewindfs's hook: Codex runs a hook from hooks.json only once the
user trusted it in `/hooks`, and a project's hooks only in a project it trusts.

Facts (checked against the real Codex 0.169.0: its app-server's `hooks/list` reports the
same verdict, tests/hooks/test_hooks_codex_trust.py):
- Trusting a hook writes ``[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`` with
  ``trusted_hash = "sha256:<hex>"`` into the user's ``$CODEX_HOME/config.toml`` (for a
  project's hooks too); ``enabled = false`` there turns the hook off.
- The hash is SHA-256 of the compact, key-sorted JSON of the hook's identity: the event
  (snake case), the group's matcher when it has one, and the one handler with Codex's
  defaults filled in (``async`` false, ``timeout`` 600 s). A hook whose command, matcher or
  timeout changed since it was trusted is "modified": Codex skips it until trusted again.
- A project's hooks load only under ``[projects."DIR"] trust_level = "trusted"``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from rewindfs.hooks.agents import is_ours

TRUSTED, UNTRUSTED, MODIFIED, DISABLED = "trusted", "untrusted", "modified", "disabled"
DEFAULT_TIMEOUT_S = 600   # what Codex assumes for a handler without one


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path(os.path.expanduser("~")) / ".codex")


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def identity_hash(event: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """The hash Codex keeps for a trusted hook (its current hash when the file changes)."""
    identity: dict[str, Any] = {
        "event_name": _snake(event),
        "hooks": [{"async": bool(handler.get("async", False)), "command": handler.get("command"),
                   "timeout": handler.get("timeout", DEFAULT_TIMEOUT_S),
                   "type": handler.get("type", "command")}]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def our_hooks(path: Path, data: dict[str, Any]) -> list[tuple[str, str]]:
    """(Codex's key, current hash) of each of rewindfs's handlers in hooks.json `data`."""
    found = []
    table = data.get("hooks")
    for event, groups in (table.items() if isinstance(table, dict) else ()):
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            if not isinstance(group, dict):
                continue
            handlers = group.get("hooks")
            for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                if is_ours(handler):
                    matcher = group.get("matcher")
                    found.append((f"{path}:{_snake(event)}:{g}:{h}", identity_hash(
                        event, matcher if isinstance(matcher, str) else None, handler)))
    return found


def _config() -> dict[str, Any]:
    try:
        with open(codex_home() / "config.toml", "rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def verdict(path: Path, data: dict[str, Any], project: Path | None = None
            ) -> tuple[str, str]:
    """(trusted | untrusted | modified | disabled, what to do about it) for our hooks in
    `data`, the hooks.json at `path`; the second is empty when Codex runs them."""
    config = _config()
    hooks = config.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    states = states if isinstance(states, dict) else {}
    worst = TRUSTED
    for key, current in our_hooks(path, data):
        state = states.get(key)
        state = state if isinstance(state, dict) else {}
        if state.get("enabled") is False:
            worst = DISABLED
        elif worst != DISABLED:
            trusted = state.get("trusted_hash")
            if not trusted:
                worst = UNTRUSTED if worst == TRUSTED else worst
            elif trusted != current:
                worst = MODIFIED
    advice = {
        TRUSTED: "",
        UNTRUSTED: "not trusted yet: Codex skips it until you trust it in /hooks (open codex, "
                   "type /hooks)",
        MODIFIED: "changed since you trusted it (installed again from another Python?): "
                  "Codex skips it until you trust it again in /hooks",
        DISABLED: "turned off in Codex's /hooks: turn it on there",
    }[worst]
    if project is not None:
        projects = config.get("projects")
        entry = projects.get(str(project)) if isinstance(projects, dict) else None
        if not isinstance(entry, dict) or entry.get("trust_level") != "trusted":
            first = (f"Codex loads {project}'s hooks only in a project it trusts "
                     f'(trust_level = "trusted" under [projects."{project}"] in '
                     f"{codex_home() / 'config.toml'}; trusting the project in Codex writes it)")
            return UNTRUSTED, first + (f"; the hook itself is {advice}" if advice else "")
    return worst, advice
