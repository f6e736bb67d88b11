"""Where each agent keeps its hooks and what rewindfs adds there (facts from each agent's
hook docs, checked against the real CLIs in tests/hooks/test_hooks_agents.py).

Each tool call gets the hook before it runs and after it is done (the after events), so
what the call changed is known to be its own (rewindfs.agent.attribution).

- Claude Code: settings.json `hooks.PreToolUse`, `PostToolUse` and `PostToolUseFailure`
  ($CLAUDE_CONFIG_DIR or ~/.claude, or DIR/.claude), matcher regex.
- Codex: hooks.json `hooks.PreToolUse` and `PostToolUse` ($CODEX_HOME or ~/.codex, or
  DIR/.codex); Codex runs a new or changed hook only after the user trusts it in `/hooks`
  (hooks.codextrust).
- Gemini CLI: settings.json `hooks.BeforeTool` and `AfterTool` in $GEMINI_CLI_HOME/.gemini
  or ~/.gemini (or DIR/.gemini), + `BeforeAgent`, which names the turn (its tool payloads
  carry none); timeouts in milliseconds.
- Cursor: hooks.json `{"version": 1, "hooks": {"beforeShellExecution",
  "afterShellExecution", "preToolUse", "postToolUse"}}`.
- OpenCode and Kilo: a JS plugin file in their plugin folder (`tool.execute.before` and
  `tool.execute.after`).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewindfs.hooks.isolation import isolation_flags
from rewindfs.hooks.payloads import AGENTS

HOOK_TIMEOUT_S = 60   # what the agent allows the hook; the hook itself gives up at 20 s
MARK = "rewindfs.hooks"


def hook_argv(agent: str, python: str | None = None) -> list[str]:
    return [python or sys.executable, *isolation_flags(), "-m", MARK, agent]


def hook_command(agent: str, python: str | None = None) -> str:
    """The command an agent runs: this interpreter, isolated from the project, straight
    into the hook's small entry (not the `rewind` click app, whose imports would cost
    every tool call)."""
    return " ".join(shlex.quote(arg) for arg in hook_argv(agent, python))


@dataclass(frozen=True)
class Spec:
    agent: str
    path: Path                 # the file rewindfs writes into (or the plugin file)
    kind: str                  # "json" or "plugin"
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    top: dict[str, Any] = field(default_factory=dict)   # keys the file needs (Cursor: version)


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _xdg_config() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or _home() / ".config")


def _claude_like(command: str, matcher: str, timeout: int) -> list[dict[str, Any]]:
    return [{"matcher": matcher,
             "hooks": [{"type": "command", "command": command, "timeout": timeout}]}]


def spec(agent: str, project: Path | None = None) -> Spec:
    if agent not in AGENTS:
        from rewindfs.errors import InvalidInput

        raise InvalidInput(f"unknown agent {agent!r}: one of {', '.join(AGENTS)}")
    cmd = hook_command(agent)
    if agent == "claude-code":   # CLAUDE_CONFIG_DIR moves Claude Code's ~/.claude
        base = project / ".claude" if project else Path(
            os.environ.get("CLAUDE_CONFIG_DIR") or _home() / ".claude")
        tools = "Bash|Write|Edit|MultiEdit|NotebookEdit"
        # A session's start and each prompt (no matcher: they name no tool) let the
        # resident process watch the project and take its first checkpoint early.
        begins = [{"hooks": [{"type": "command", "command": cmd, "timeout": HOOK_TIMEOUT_S}]}]
        return Spec(agent, base / "settings.json", "json", {
            **{event: _claude_like(cmd, tools, HOOK_TIMEOUT_S)
               for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure")},
            **{event: begins for event in ("SessionStart", "UserPromptSubmit")}})
    if agent == "codex":
        base = project / ".codex" if project else Path(
            os.environ.get("CODEX_HOME") or _home() / ".codex")
        return Spec(agent, base / "hooks.json", "json", {
            event: _claude_like(cmd, "Bash|apply_patch|Edit|Write", HOOK_TIMEOUT_S)
            for event in ("PreToolUse", "PostToolUse")})
    if agent == "gemini":
        # GEMINI_CLI_HOME stands in for the home directory Gemini CLI keeps .gemini in.
        base = project / ".gemini" if project else Path(
            os.environ.get("GEMINI_CLI_HOME") or _home()) / ".gemini"
        hook = {"type": "command", "command": cmd, "name": "rewindfs",
                "timeout": HOOK_TIMEOUT_S * 1000}
        tools = "run_shell_command|write_file|replace"
        return Spec(agent, base / "settings.json", "json", {
            "BeforeTool": [{"matcher": tools, "hooks": [hook]}],
            "AfterTool": [{"matcher": tools, "hooks": [hook]}],
            "BeforeAgent": [{"hooks": [hook]}]})
    if agent == "cursor":
        base = project / ".cursor" if project else _home() / ".cursor"
        shell = [{"command": cmd, "timeout": HOOK_TIMEOUT_S}]
        tools = [{"command": cmd, "matcher": "Write|StrReplace|Edit|Delete",
                  "timeout": HOOK_TIMEOUT_S}]
        return Spec(agent, base / "hooks.json", "json", {
            "beforeShellExecution": shell, "afterShellExecution": shell,
            "preToolUse": tools, "postToolUse": tools}, top={"version": 1})
    folder = {"opencode": "opencode", "kilo": "kilo"}[agent]
    base = project / f".{folder}" if project else _xdg_config() / folder
    return Spec(agent, base / "plugin" / "rewindfs.js", "plugin")


def _our_command(entry: Any) -> bool:
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and f"-m {MARK} " in command


def is_ours(entry: Any) -> bool:
    """An entry (at any depth) whose command runs rewindfs's hook."""
    if isinstance(entry, dict):
        if _our_command(entry):
            return True
        hooks = entry.get("hooks")
        return isinstance(hooks, list) and any(is_ours(h) for h in hooks)
    return False


def without_ours(entries: list[Any]) -> list[Any]:
    """An event's entries with rewindfs's hooks taken out, and nothing else: inside a
    matcher group shared with the user's own hooks only ours go (the group stays); a
    group left with no hook at all goes too."""
    out = []
    for entry in entries:
        if _our_command(entry):
            continue
        hooks = entry.get("hooks") if isinstance(entry, dict) else None
        if isinstance(hooks, list) and any(is_ours(h) for h in hooks):
            kept = [h for h in hooks if not is_ours(h)]
            if not kept:
                continue
            entry = {**entry, "hooks": kept}
        out.append(entry)
    return out


def hook_commands(entry: Any) -> list[str]:
    """Every hook command in a config's JSON (at any depth)."""
    if isinstance(entry, dict):
        command = entry.get("command")
        return ([command] if isinstance(command, str) else []) + [
            c for value in entry.values() for c in hook_commands(value)]
    if isinstance(entry, list):
        return [c for value in entry for c in hook_commands(value)]
    return []


def missing_events(s: Spec, data: Any = None, raw: bytes = b"") -> list[str]:
    """The events of `s` an installed config (`data`, the parsed JSON; or a plugin's
    `raw` source) has no hook of ours in: an install by an older rewindfs, before the
    after events."""
    if s.kind == "plugin":
        return [] if b'"tool.execute.after"' in raw else ["tool.execute.after"]
    table = data.get("hooks") if isinstance(data, dict) else None
    table = table if isinstance(table, dict) else {}
    return [event for event in s.events
            if not any(is_ours(e) for e in table.get(event) or [] if isinstance(e, dict))]


def upgrade_problem(agent: str, missing: list[str]) -> str:
    """What `rewind hooks status` says of an install missing `missing` events."""
    return (f"installed by an older rewindfs, without its {', '.join(missing)} hook: run "
            f"`rewind hooks install {agent}` again (a revert of one session can then "
            "tell its changes from another's)") if missing else ""
