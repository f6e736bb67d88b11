"""`rewind hooks install|uninstall|status` and `rewind hook AGENT`: agent hooks (rewindfs.hooks)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from rewindfs.cli.help import examples
from rewindfs.cli.options import refuse_together
from rewindfs.errors import InvalidInput
from rewindfs.hooks import hooklog
from rewindfs.hooks.payloads import AGENTS

AGENT = click.Choice(AGENTS)
PROJECT = click.option("--project", "project", metavar="DIR", default=None,
                       help="The project's own config (DIR/.claude, ...) instead of your "
                            "user-level one.")


@click.group(epilog=examples(
    "rewind hooks install claude-code         # ~/.claude/settings.json",
    "rewind hooks install codex --project .   # ./.codex/hooks.json",
    "rewind hooks status",
    "rewind hooks uninstall gemini",
))
def hooks() -> None:
    """Checkpoint before agents' tool calls that may change files: Claude Code, Codex,
    Gemini CLI, Cursor, OpenCode, Kilo."""


OTHER_OWNER = click.option(
    "--allow-other-owner", "other_owner", is_flag=True,
    help="Write the agent's file even when another user owns it (or its folder); it "
         "stays theirs, with its mode.")


MCP = click.option("--mcp", is_flag=True,
                   help="Rewindfs's MCP server (`rewind mcp`) in AGENT's MCP configuration "
                        "instead of the hook: the agent can then list, show, diff and read "
                        "checkpoints itself.")


@hooks.command(epilog=examples(
    "rewind hooks install claude-code",
    "rewind hooks install kilo",
    "rewind hooks install claude-code --mcp                  # the MCP server, read-only",
    "rewind hooks install codex --mcp --allow-restore        # ... that may restore",
))
@click.argument("agent", type=AGENT)
@PROJECT
@OTHER_OWNER
@MCP
@click.option("--allow-restore", is_flag=True,
              help="With --mcp: let the agent call restore and undo (every restore saves "
                   "the current state first; `rewind undo` takes it back).")
def install(agent: str, project: str | None, other_owner: bool, mcp: bool,
            allow_restore: bool) -> None:
    """Add rewindfs's hook to AGENT's config (the rest of the file stays as it is); with
    --mcp, its MCP server."""
    from rewindfs.hooks import install as inst

    where = inst.check_project(project)
    if allow_restore and not mcp:
        raise click.UsageError("--allow-restore is for the MCP server: add --mcp")
    if mcp:
        from rewindfs.hooks import mcpinstall

        outcome = mcpinstall.install(agent, where, other_owner, allow_restore)
        click.echo(f"{agent}: {outcome.message}")
        return
    outcome = inst.install(agent, where, other_owner)
    click.echo(f"{agent}: {outcome.message}")
    found = inst.installed(agent, where)
    if found.problem:
        click.echo(f"{agent}: {found.problem}")
    elif found.trust:
        click.echo(f"{agent}: Codex already trusts this hook")


@hooks.command(epilog=examples("rewind hooks uninstall claude-code",
                               "rewind hooks uninstall claude-code --mcp",
                               "rewind hooks uninstall claude-code --file ~/work/.claude/"
                               "settings.json"))
@click.argument("agent", type=AGENT)
@PROJECT
@OTHER_OWNER
@MCP
@click.option("--file", "file", metavar="FILE", default=None,
              help="Only this config file of AGENT's hook (one `rewind hooks status` "
                   "names); default: every one install wrote, whatever the environment "
                   "(CLAUDE_CONFIG_DIR, XDG_CONFIG_HOME, ...) says now.")
def uninstall(agent: str, project: str | None, other_owner: bool, mcp: bool,
              file: str | None) -> None:
    """Remove exactly what `rewind hooks install AGENT` (with --mcp: `... --mcp`) added."""
    from rewindfs.hooks import install as inst
    from rewindfs.hooks import records

    where = inst.check_project(project)
    if mcp:
        refuse_together(**{"--mcp": mcp, "--file": file})
        from rewindfs.hooks import mcpinstall

        click.echo(f"{agent}: {mcpinstall.uninstall(agent, where, other_owner).message}")
        return
    paths = records.every(agent, where)
    if file is not None:
        chosen = Path(file).expanduser().absolute()
        if chosen not in paths:
            raise InvalidInput(f"{chosen} is no config file rewindfs installed {agent}'s hook "
                               f"into (`rewind hooks status` names them)")
        paths = [chosen]
    for path in paths:
        outcome = inst.uninstall(agent, where, other_owner, path)
        if outcome.changed or path == paths[0]:
            click.echo(f"{agent}: {outcome.message}")


@hooks.command(epilog=examples("rewind hooks status", "rewind hooks status --project ."))
@PROJECT
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(project: str | None, as_json: bool) -> None:
    """Where each agent's hooks are, whether they are active, which Python they run (the
    rewind tool's, a checkout's), and the last error."""
    from rewindfs.hooks import install as inst
    from rewindfs.hooks import mcpinstall, records, runner

    where = inst.check_project(project)
    folder = hooklog.refusal()   # a hooks folder others can change: not read, not used
    log = hooklog.entries() if folder is None else []
    rows = []
    for agent in AGENTS:
        mine = [e for e in log if e[1] == agent]
        errors = [e for e in mine if e[2] in (hooklog.ERROR, hooklog.SKIPPED)]
        done = [e for e in mine if e[2] == hooklog.INFO]
        mcp_path, mcp = mcpinstall.installed(agent, where)
        paths = records.every(agent, where) if folder is None else [None]
        for path in paths:
            found = inst.installed(agent, where, path)
            if path is not None and path != paths[0] and not found.found:
                continue   # a recorded file the hook is no longer in
            rows.append({
                "agent": agent, "path": str(found.spec.path), "installed": found.found,
                "mcp": None if mcp is None else {"path": str(mcp_path), "allow_restore": mcp},
                "active": found.found and not found.problem,
                "problem": found.problem or None, "codex_trust": found.trust,
                "python": found.python,
                "runs": runner.what(found.python) if found.python else None,
                "last_checkpoint": " ".join((done[-1][0], done[-1][3])) if done else None,
                "last_error": " ".join((errors[-1][0], errors[-1][3])) if errors else None})
    from rewindfs.hooks import helper

    pid = helper.running() if folder is None else None
    if as_json:
        recorded = [] if folder is not None else [
            {"agent": r.agent, "project": str(r.project) if r.project else None,
             "path": str(r.path), "python": inst.installed(r.agent, r.project, r.path).python}
            for r in records.recorded()]
        click.echo(json.dumps({"log": str(hooklog.log_path()), "helper": pid,
                               "folder_problem": folder, "agents": rows,
                               "recorded": recorded}, indent=2))
        return
    for row in rows:
        state = "not installed"
        if row["installed"]:
            trust = row["codex_trust"]
            state = ("active" if row["active"] else f"installed, {trust}"
                     if trust not in (None, "trusted") else "installed, not active")
        click.echo(f"{row['agent']:<12} {state:<22} {row['path']}")
        if row["mcp"]:
            how = "restores allowed" if row["mcp"]["allow_restore"] else "read-only"
            click.echo(f"{'':<12} mcp: {how}, in {row['mcp']['path']}")
        for key, label in (("runs", "runs"), ("problem", "problem"),
                           ("last_checkpoint", "last checkpoint"), ("last_error", "last error")):
            if row[key]:
                click.echo(f"{'':<12} {label}: {row[key]}")
    click.echo(f"log: {hooklog.log_path()}")
    if folder is not None:
        click.echo(f"problem: {folder}")
    if not helper.enabled():
        click.echo("helper: off (REWIND_HOOK_HELPER=0)")
    else:
        click.echo(f"helper: running (pid {pid})" if pid else
                   "helper: not running (the next checkpoint a hook takes starts it)")


@click.command(epilog=examples(
    "echo '{...payload...}' | rewind hook claude-code   # what the installed hook runs"))
@click.argument("agent")
def hook(agent: str) -> None:
    """Run AGENT's hook on the JSON payload on stdin (installed hooks call this entry
    directly: `python -I -m rewindfs.hooks AGENT`). Always exits 0."""
    from rewindfs.hooks.entry import main

    sys.exit(main([agent]))


COMMANDS = [hooks, hook]
