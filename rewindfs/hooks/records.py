"""Every hook install this user's records name (`rewind-hooks/installed/`), whatever the
environment: a hook installed with CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME or
XDG_CONFIG_HOME set is found without them, for `rewind hooks status|uninstall`,
`rewind doctor` and scripts/install --uninstall.

A record names the config file install wrote; newer ones also name the agent and the
project (`--project`). For an older one the agent is read from the file itself (the
command of rewindfs's hook there ends with it), the project from where the file sits.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from rewindfs.hooks import hooklog, runner
from rewindfs.hooks.agents import hook_commands, spec
from rewindfs.hooks.configrecord import record_path
from rewindfs.hooks.payloads import AGENTS

MAX_RECORD = 16 * 1024 * 1024   # bytes of a record read (it holds a config file's bytes)
# The variable that moves each agent's user-level folder, and how far up from the file
VARIABLES = {"claude-code": ("CLAUDE_CONFIG_DIR", 1), "codex": ("CODEX_HOME", 1),
             "gemini": ("GEMINI_CLI_HOME", 2), "opencode": ("XDG_CONFIG_HOME", 3),
             "kilo": ("XDG_CONFIG_HOME", 3)}


@dataclass(frozen=True)
class Install:
    agent: str
    project: Path | None   # None: the user-level config
    path: Path


def recorded() -> list[Install]:
    """Every hook install (not MCP server) the records name, other projects' too."""
    folder = hooklog.hooks_dir() / "installed"
    if hooklog.refusal() is not None:
        return []   # a folder others can change is not read (hooks status says so)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for name in names:
        found = _install_of(folder / name)
        if found is not None and found not in out:
            out.append(found)
    return out


def every(agent: str, project: Path | None = None) -> list[Path]:
    """The config files of `agent`'s hook (user-level, or `project`'s): where install
    writes now, then every other one the records name."""
    paths = [spec(agent, project).path]
    for found in recorded():
        if found.agent == agent and found.project == project and found.path not in paths:
            paths.append(found.path)
    return paths


def placing(agent: str, project: Path | None, path: Path) -> str:
    """The command that installs `agent`'s hook into `path` again: with the agent's
    variable set when that is what put it there."""
    if project is not None:
        return f"rewind hooks install {agent} --project {shlex.quote(str(project))}"
    command = f"rewind hooks install {agent}"
    if path == spec(agent).path or agent not in VARIABLES:
        return command
    variable, up = VARIABLES[agent]
    return f"{variable}={shlex.quote(str(path.parents[up - 1]))} {command}"


def _install_of(record: Path) -> Install | None:
    try:
        if os.lstat(record).st_size > MAX_RECORD:
            return None
        data = json.loads(record.read_bytes())
        path = Path(data["path"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not path.is_absolute() or record_path(path).name != record.name:
        return None   # another install's record (the MCP server's), or not a record
    agent = data.get("agent")
    if agent not in AGENTS:
        agent = _agent_in(path)
        if agent is None:
            return None
    project = data.get("project") if "agent" in data else _project_of(agent, path)
    return Install(agent, Path(project) if isinstance(project, str) else None, path)


def _agent_in(path: Path) -> str | None:
    """The agent whose hook rewindfs wrote into `path` (an older record names none)."""
    try:
        raw = path.read_bytes()[:MAX_RECORD]
    except OSError:
        return None
    command = runner.plugin_command(raw)
    commands = [command] if command else []
    if not commands:
        try:
            commands = hook_commands(json.loads(raw))
        except ValueError:
            return None
    for command in commands:
        if runner.python_of(command) is not None:
            agent = command.rsplit(" ", 1)[-1]
            if agent in AGENTS:
                return agent
    return None


def _project_of(agent: str, path: Path) -> Path | None:
    """The project whose config `path` is (DIR/.claude/settings.json, DIR/.opencode/plugin/
    rewindfs.js), or None for a user-level one."""
    depth = 3 if spec(agent).kind == "plugin" else 2
    if len(path.parents) >= depth:
        project = path.parents[depth - 1]
        if spec(agent, project).path == path:
            return project
    return None
