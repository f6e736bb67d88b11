"""`rewind mcp`: the MCP server an agent starts over stdio (rewindfs.mcpserver)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option
from rewindfs.errors import InvalidInput


@click.command(epilog=examples(
    "rewind hooks install claude-code --mcp                  # how agents start it",
    "rewind hooks install claude-code --mcp --allow-restore  # and may restore",
    "rewind mcp -C ~/src/app                                  # by hand: JSON-RPC on stdio",
))
@dir_option
@click.option("--allow-restore", is_flag=True,
              help="Let the agent call restore and undo (each restore saves the current "
                   "state first, so `rewind undo` takes it back). Without it the server "
                   "is read-only.")
@click.pass_obj
def mcp(app: App, directory: str | None, allow_restore: bool) -> None:
    """Serve the Model Context Protocol on stdin/stdout, so an agent can list, show, diff
    and read its project's checkpoints, and with --allow-restore restore and undo.

    Agents start it themselves once `rewind hooks install AGENT --mcp` has registered
    it. Tools: list_checkpoints, show_checkpoint, diff, read_file, restore, undo; each
    takes a `project` (default: DIR, else the directory the server runs in).
    """
    if sys.stdin.isatty():
        click.echo("rewind mcp: an MCP server speaking JSON-RPC on stdin/stdout; agents "
                   "start it (`rewind hooks install AGENT --mcp`). Ctrl-D ends it.", err=True)
    where = Path(os.path.expanduser(directory)) if directory else Path.cwd()
    if not where.is_dir():
        raise InvalidInput(f"not a directory: {directory}")
    from rewindfs.mcpserver.server import serve  # the SDK: only for this command
    from rewindfs.mcpserver.session import Session

    serve(Session(app, where.resolve(), allow_restore))


COMMANDS = [mcp]
