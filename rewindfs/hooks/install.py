"""`rewind hooks install|uninstall|status`: rewindfs's entries in each agent's config.

Install merges into the file the agent already has: every other key and hook of the user's
stays (a hook of theirs sharing a matcher group with ours too), the file keeps its
indentation, mode, owner and final newline, and a second install changes nothing. The
bytes the file had before are recorded (``rewind-hooks/installed/``), so an uninstall of
an install nobody touched since puts back exactly those bytes (or removes the file and the
folders install created); when the user edited the file in between, uninstall removes only
rewindfs's own hook entries. Writes are atomic and go through a symlink to its target
(hooks.configfile), which also refuses another user's file unless told to.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rewindfs.errors import InvalidInput, Refused
from rewindfs.hooks import configfile, plugin, runner
from rewindfs.hooks.agents import (
    Spec,
    hook_command,
    hook_commands,
    is_ours,
    missing_events,
    spec,
    upgrade_problem,
    without_ours,
)
from rewindfs.hooks.configrecord import digest as _digest
from rewindfs.hooks.configrecord import dump as _dump
from rewindfs.hooks.configrecord import forget as _forget
from rewindfs.hooks.configrecord import hand_over
from rewindfs.hooks.configrecord import missing_dirs as _missing_dirs
from rewindfs.hooks.configrecord import parse as _parse
from rewindfs.hooks.configrecord import read as _read
from rewindfs.hooks.configrecord import read_record as _read_record
from rewindfs.hooks.configrecord import rmdir_if_empty as _rmdir_if_empty
from rewindfs.hooks.configrecord import write_record as _write_record


@dataclass
class Outcome:
    agent: str
    path: Path
    changed: bool
    message: str


def _hooks_table(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    table = data.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise Refused(f"{path}: \"hooks\" is not an object; left as it is")
    return table


def _merged(s: Spec, data: dict[str, Any]) -> dict[str, Any]:
    for key, value in s.top.items():
        data.setdefault(key, value)
    table = _hooks_table(s.path, data)
    for event, entries in s.events.items():
        current = table.setdefault(event, [])
        if not isinstance(current, list):
            raise Refused(f"{s.path}: hooks.{event} is not a list; left as it is")
        current[:] = without_ours(current) + entries
    return data


def _without_ours(s: Spec, data: dict[str, Any], added: list[str]) -> dict[str, Any]:
    table = data.get("hooks")
    if isinstance(table, dict):
        for event in list(table):
            if isinstance(table[event], list):
                table[event] = without_ours(table[event])
                if not table[event] and f"hooks.{event}" in added:
                    del table[event]
        if not table and "hooks" in added:
            del data["hooks"]
    for key in s.top:
        if key in added and key in data and len(data) == 1:
            del data[key]
    return data


def _contents(s: Spec, raw: bytes | None) -> tuple[bytes, list[str]]:
    """The file with rewindfs's hooks in, and the keys it had to add."""
    if s.kind == "plugin":
        if raw is not None and plugin.HEADER.encode() not in raw:
            raise Refused(f"{s.path} exists and is not rewindfs's plugin; left as it is")
        return plugin.source(s.agent, sys.executable).encode(), []
    data = _parse(s.path, raw)
    before = json.loads(json.dumps(data))
    added = [k for k in s.top if k not in before]
    if "hooks" not in before:
        added.append("hooks")
    table = before.get("hooks") if isinstance(before.get("hooks"), dict) else {}
    added += [f"hooks.{e}" for e in s.events if e not in table]
    return _dump(_merged(s, data), raw), added


# -- the verbs --------------------------------------------------------------------------

def install(agent: str, project: Path | None = None, other_owner: bool = False) -> Outcome:
    """`other_owner`: write a file (or into a folder) someone else owns, keeping it theirs."""
    s = spec(agent, project)
    raw = _read(s.path)
    new, added = _contents(s, raw)
    if raw == new:
        return Outcome(agent, s.path, False, f"already installed in {s.path}")
    configfile.check_owner(s.path, configfile.target(s.path), other_owner)
    record = _read_record(s.path)
    if record is None or record.get("written") != (_digest(raw) if raw is not None else None):
        # First install, or the file changed since ours: what it is now is what uninstall
        # brings back. Keys an earlier install added are still ours to take out.
        earlier = [k for k in (record or {}).get("added") or [] if k not in added]
        added += earlier
        original = raw
        if raw is not None and s.kind == "json" and _installed_in(_parse(s.path, raw)):
            # Ours already there with no record of the file before: take them out.
            original = _dump(_without_ours(s, _parse(s.path, raw), earlier), raw)
        record = {"path": str(s.path), "created_dirs": _missing_dirs(s.path), "added": added,
                  "original": None if original is None else
                  original.decode("utf-8", "surrogateescape")}
    configfile.make_dirs(s.path)
    # Whose and where, whatever the environment uninstall and status run in (hooks.records)
    record.update(agent=agent, project=str(project) if project is not None else None)
    record["written"] = _digest(new)
    _write_record(s.path, record)
    configfile.write(s.path, new, other_owner)
    return Outcome(agent, s.path, True, f"installed in {s.path}")


def uninstall(agent: str, project: Path | None = None, other_owner: bool = False,
              path: Path | None = None) -> Outcome:
    """`path`: that config file of the agent's (one the records name: hooks.records)
    instead of the one the environment names now."""
    s = _spec_at(agent, project, path)
    raw = _read(s.path)
    if raw is None:
        _forget(s.path)
        return Outcome(agent, s.path, False, f"not installed ({s.path} does not exist)")
    record = _read_record(s.path)
    configfile.check_owner(s.path, configfile.target(s.path), other_owner)
    if record and record.get("written") == _digest(raw):
        original = record.get("original")
        if original is None and not s.path.is_symlink():
            configfile.remove(s.path, other_owner)
            for folder in record.get("created_dirs") or []:
                _rmdir_if_empty(Path(folder))
            _forget(s.path)
            return Outcome(agent, s.path, True, f"removed from {s.path}")
        if original is not None:
            configfile.write(s.path, original.encode("utf-8", "surrogateescape"), other_owner)
            _forget(s.path)
            return Outcome(agent, s.path, True, f"removed from {s.path}")
    if s.kind == "plugin":
        if plugin.HEADER.encode() not in raw:
            return Outcome(agent, s.path, False, f"not installed ({s.path} is not rewindfs's)")
        configfile.remove(s.path, other_owner)
        _forget(s.path)
        return Outcome(agent, s.path, True, f"removed {s.path}")
    data = _parse(s.path, raw)
    if not _installed_in(data):
        _forget(s.path)
        return Outcome(agent, s.path, False, f"not installed in {s.path}")
    added = (record or {}).get("added") or []
    new = _dump(_without_ours(s, data, added), raw)
    configfile.write(s.path, new, other_owner)
    hand_over(s.path, "", record, raw, new)   # the MCP server's install, made after ours
    _forget(s.path)
    return Outcome(agent, s.path, True, f"removed rewindfs's hooks from {s.path} "
                                        "(the rest of the file as you left it)")


def _installed_in(data: dict[str, Any]) -> bool:
    table = data.get("hooks")
    return isinstance(table, dict) and any(
        is_ours(e) for entries in table.values() if isinstance(entries, list) for e in entries)


@dataclass
class Installed:
    """What `installed` found: the spec, whether rewindfs's hook is there, why it would
    not run (empty: it would), Codex's trust verdict (None for the other agents:
    hooks.codextrust) and the Python the hook runs (hooks.runner)."""

    spec: Spec
    found: bool
    problem: str = ""
    trust: str | None = None
    python: str | None = None


def installed(agent: str, project: Path | None = None, path: Path | None = None
              ) -> Installed:
    s = _spec_at(agent, project, path)
    raw = _read(s.path)
    if raw is None:
        return Installed(s, False)
    if s.kind == "plugin":
        command = runner.plugin_command(raw) if plugin.HEADER.encode() in raw else None
        if command is None:
            return Installed(s, False)
        problem = runner.problem(agent, command, hook_command(agent)) or \
            upgrade_problem(agent, missing_events(s, raw=raw))
        return Installed(s, True, problem, None, runner.python_of(command))
    try:
        data = _parse(s.path, raw)
    except Refused as exc:
        return Installed(s, False, str(exc))
    ours = [c for c in hook_commands(data) if runner.python_of(c) is not None]
    if not _installed_in(data) or not ours:
        return Installed(s, False)
    current = hook_command(agent)
    # Each event has its hook (before and after a call): any of them that would not run
    # is the problem.
    command = next((c for c in ours if runner.problem(agent, c, current)),
                   current if current in ours else ours[0])
    problem = runner.problem(agent, command, current) or \
        upgrade_problem(agent, missing_events(s, data))
    trust = None
    if agent == "codex":
        from rewindfs.hooks import codextrust

        trust, advice = codextrust.verdict(s.path, data, project)
        problem = problem or advice
    return Installed(s, True, problem, trust, runner.python_of(command))


def _spec_at(agent: str, project: Path | None, path: Path | None) -> Spec:
    s = spec(agent, project)
    return s if path is None or path == s.path else replace(s, path=path)


def check_project(project: str | None) -> Path | None:
    if project is None:
        return None
    path = Path(project).expanduser().resolve()
    if not path.is_dir():
        raise InvalidInput(f"not a directory: {project}")
    return path


__all__ = ["Installed", "Outcome", "check_project", "install", "installed", "uninstall"]
