"""Where each agent keeps its MCP servers, and rewindfs's entry there (`rewind mcp`, started
by the agent over stdio). Facts from each agent's docs, checked against the real CLIs
(their own `mcp add` and `mcp list`, tests/mcp/test_mcp_install.py):

- Claude Code: `mcpServers` in ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json when set),
  or a project's DIR/.mcp.json; `{"type": "stdio", "command", "args"}`.
- Codex: `[mcp_servers.NAME]` in config.toml ($CODEX_HOME or ~/.codex, or DIR/.codex);
  `command`, `args`.
- Gemini CLI: `mcpServers` in settings.json (as its hooks: ~/.gemini or DIR/.gemini);
  `command`, `args`, `timeout` (ms).
- Cursor: `mcpServers` in ~/.cursor/mcp.json or DIR/.cursor/mcp.json.
- OpenCode and Kilo: `mcp` in their config file ($XDG_CONFIG_HOME/opencode/opencode.json,
  .../kilo/kilo.json; a project's DIR/.opencode/opencode.json, DIR/.kilo/kilo.json);
  `{"type": "local", "command": [argv...], "enabled": true}`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewindfs.hooks.isolation import isolation_flags
from rewindfs.hooks.payloads import AGENTS

SERVER = "rewind"  # the server's name: the agent calls its tools mcp__rewind__...
MODULE = "rewindfs.cli"
GEMINI_TIMEOUT_MS = 600_000


@dataclass(frozen=True)
class McpSpec:
    agent: str
    path: Path
    kind: str  # "json" or "toml" (Codex)
    table: str  # the key holding the servers
    entry: dict[str, Any]  # rewindfs's server, as that agent writes one


def server_argv(allow_restore: bool = False, project: Path | None = None,
                python: str | None = None) -> list[str]:
    """The command an agent starts: this interpreter, isolated from the project (as the
    hooks), straight into `rewind mcp`."""
    return [python or sys.executable, *isolation_flags(), "-m", MODULE, "mcp",
            *(["--allow-restore"] if allow_restore else []),
            *(["-C", str(project)] if project else [])]


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _xdg_config() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or _home() / ".config")


def spec(agent: str, project: Path | None = None, allow_restore: bool = False) -> McpSpec:
    if agent not in AGENTS:
        from rewindfs.errors import InvalidInput

        raise InvalidInput(f"unknown agent {agent!r}: one of {', '.join(AGENTS)}")
    argv = server_argv(allow_restore, project)
    plain = {"command": argv[0], "args": argv[1:]}
    if agent == "claude-code":
        path = project / ".mcp.json" if project else Path(
            os.environ.get("CLAUDE_CONFIG_DIR") or _home()) / ".claude.json"
        return McpSpec(agent, path, "json", "mcpServers", {"type": "stdio", **plain})
    if agent == "codex":
        base = project / ".codex" if project else Path(
            os.environ.get("CODEX_HOME") or _home() / ".codex")
        return McpSpec(agent, base / "config.toml", "toml", "mcp_servers", plain)
    if agent == "gemini":
        base = project / ".gemini" if project else Path(
            os.environ.get("GEMINI_CLI_HOME") or _home()) / ".gemini"
        # Gemini CLI's own default for a server's requests, said: without it, `gemini mcp
        # list` gives a server 5 s to start, and the SDK's import alone takes 1-3 s.
        return McpSpec(agent, base / "settings.json", "json", "mcpServers",
                       {**plain, "timeout": GEMINI_TIMEOUT_MS})
    if agent == "cursor":
        base = project / ".cursor" if project else _home() / ".cursor"
        return McpSpec(agent, base / "mcp.json", "json", "mcpServers", plain)
    name = {"opencode": "opencode", "kilo": "kilo"}[agent]
    base = project / f".{name}" if project else _xdg_config() / name
    return McpSpec(agent, base / f"{name}.json", "json", "mcp",
                   {"type": "local", "command": argv, "enabled": True})


def argv_of(entry: Any) -> list[str]:
    """The command line a server entry starts (any of the agents' shapes)."""
    if not isinstance(entry, dict):
        return []
    command, args = entry.get("command"), entry.get("args")
    if isinstance(command, list):
        return [str(c) for c in command]
    if isinstance(command, str):
        return [command, *(str(a) for a in args)] if isinstance(args, list) else [command]
    return []


def is_ours(entry: Any) -> bool:
    """A server entry that starts `rewind mcp`."""
    argv = argv_of(entry)
    return any(argv[i:i + 3] == ["-m", MODULE, "mcp"] for i in range(len(argv)))


def allows_restore(entry: Any) -> bool:
    return "--allow-restore" in argv_of(entry)
