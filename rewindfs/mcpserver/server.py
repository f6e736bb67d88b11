"""The MCP server itself, on the official SDK's MCPServer over stdio: the six tools with
their names (agents call them as `mcp__rewind__list_checkpoints`, ...), descriptions and
parameters, each answering with mcpserver.tools' text or an error result.

With mcpserver.wire, the only modules that import the `mcp` SDK (and pydantic): `rewind
mcp` alone loads them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from rewindfs import __version__
from rewindfs.errors import RewindError
from rewindfs.mcpserver import sizing, tools
from rewindfs.mcpserver.session import Session

NAME = "rewind"
INSTRUCTIONS = """\
rewindfs keeps checkpoints of this project: one before each destructive command an agent \
runs (rm, sed -i, git reset...) and before its first file write of a turn. When you notice \
you deleted or broke something, list_checkpoints shows them (1 = newest), show_checkpoint \
and diff say what changed, read_file gives a file as it was. restore puts files back \
(dry_run first shows the plan); every restore saves the current state first, and undo \
takes it back. Restores are allowed only when the user started this server with \
--allow-restore. A checkpoint is named by its number, its id, a label or a time \
('10 minutes ago'); kilo:N and opencode:N name Kilo Code's and OpenCode's own steps. \
A file name that is not plain text (not UTF-8, or holding control characters) is shown in \
double quotes with git's escapes, "caf\\351.txt", and given back the same way, quotes \
included."""

Project = Annotated[str | None, Field(
    description="The project: a path (its directory or any path inside it). Default: the "
                "directory the server runs in.")]
NAMES = ('A name the tools show in double quotes ("caf\\351.txt": not UTF-8, or holding '
         'control characters) is given so, quotes included.')
Ref = Annotated[str, Field(
    description="A checkpoint: its number from list_checkpoints (1 = newest), its id, a "
                "label, or a time such as '10 minutes ago'.")]

READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                          open_world_hint=False)


def answer(run: Callable[[], str]) -> str:
    """A tool's text, or an error result with the one line a RewindError says; either with
    no control character and no byte that is not UTF-8 (a project's directory named so:
    shown as \\xNN, since no JSON can carry it)."""
    try:
        return sizing.clean(run())
    except RewindError as exc:
        raise ToolError(sizing.one_line(str(exc))) from None
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        raise ToolError(sizing.one_line(f"{exc.strerror or exc}{where}")) from None


def build(session: Session) -> MCPServer:
    server = MCPServer(NAME, version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    def tool(annotations: ToolAnnotations):
        """Register a tool: its docstring as one paragraph, its answer as text only."""
        def register(fn: Callable[..., str]) -> Callable[..., str]:
            server.add_tool(fn, description=" ".join((fn.__doc__ or "").split()),
                            annotations=annotations, structured_output=False)
            return fn
        return register

    def read(run: Callable[[], str]) -> str:
        def once() -> str:
            with session.call():
                return run()
        return answer(once)

    @tool(READS)
    def list_checkpoints(
        project: Project = None,
        limit: Annotated[int | None, Field(
            description=f"How many, newest first (default {sizing.LIST_DEFAULT}, at most "
                        f"{sizing.LIST_MAX}).")] = None,
    ) -> str:
        """List the project's checkpoints, newest first: number, id, age, reason, the agent
        (and turn) that took it, labels."""
        return read(lambda: tools.list_checkpoints(session, project, limit))

    @tool(READS)
    def show_checkpoint(ref: Ref, project: Project = None) -> str:
        """One checkpoint: when, why, which agent, and which files it changed against the
        previous checkpoint."""
        return read(lambda: tools.show_checkpoint(session, ref, project))

    @tool(READS)
    def diff(
        ref: Ref,
        path: Annotated[str | None, Field(
            description="Only this file or directory (relative to the project). "
                        + NAMES)] = None,
        ref2: Annotated[str | None, Field(
            description="Compare with this checkpoint instead of the working tree.")] = None,
        project: Project = None,
    ) -> str:
        """What changed from checkpoint `ref` to the working tree (or to checkpoint `ref2`):
        a summary per file, then the patch (long patches are cut, with a note)."""
        return read(lambda: tools.diff(session, ref, path, ref2, project))

    @tool(READS)
    def read_file(
        ref: Ref,
        path: Annotated[str, Field(description="The file, relative to the project. " + NAMES)],
        project: Project = None,
    ) -> str:
        """A file as it was in checkpoint `ref` (long files are cut, binary files
        described)."""
        return read(lambda: tools.read_file(session, ref, path, project))

    @tool(CHANGES)
    def restore(
        ref: Ref,
        paths: Annotated[list[str] | None, Field(
            description="Only these files or directories (relative to the project); "
                        "default (left out): the whole project. " + NAMES)] = None,
        dry_run: Annotated[bool, Field(
            description="Only say what it would change; change nothing.")] = False,
        project: Project = None,
        git: Annotated[bool, Field(
            description="Also give the project's git repository (.git) back as the "
                        "checkpoint recorded it: commits, branches, tags, stash, HEAD, "
                        "index. Default: .git is never touched.")] = False,
    ) -> str:
        """Put the project (or `paths`) back as checkpoint `ref` holds it. The current
        state is saved first (a pre-rollback snapshot), so `undo` takes the restore back.
        Files created since the checkpoint are deleted by a whole-project restore: use
        dry_run first to see the plan. Needs the server started with --allow-restore."""
        return answer(lambda: tools.restore(session, ref, paths, dry_run, project, git))

    @tool(CHANGES)
    def undo(
        dry_run: Annotated[bool, Field(
            description="Only say what it would change; change nothing.")] = False,
        project: Project = None,
    ) -> str:
        """Take back the last restore (or undo) of the project: everything it changed goes
        back as it was just before. Needs the server started with --allow-restore."""
        return answer(lambda: tools.undo(session, dry_run, project))

    return server


def serve(session: Session) -> None:
    """Answer MCP requests on stdin/stdout until the client closes stdin: every one of
    them, a line the SDK cannot read with a JSON-RPC error (mcpserver.wire)."""
    import anyio

    from rewindfs.mcpserver import wire

    anyio.run(wire.serve, build(session))
