"""The `rewind` click group: global options, failures turned into one line and an exit
code, and each command's module imported only when that command runs (COMMANDS names
where each lives), so a command pays for its own imports and nobody else's."""

from __future__ import annotations

import importlib
import sys

import click

from rewindfs import __version__
from rewindfs.cli import failure, interrupts
from rewindfs.cli.help import examples
from rewindfs.cli.output.term import COLOR_CHOICES

# command name -> the module of rewindfs.cli.commands defining it (in its COMMANDS list). A test
# checks this table against the modules, so a new command cannot be left out.
COMMANDS: dict[str, str] = {
    "checkpoint": "checkpoints", "list": "checkpoints", "diff": "diff",
    "log": "files", "cat": "files", "grep": "files",
    "restore": "restore", "undo": "undo",
    "show": "show",
    "delete": "manage", "label": "manage", "forget": "manage",
    "mount": "mount", "umount": "mount",
    "config": "status", "status": "status",
    "prune": "maintenance", "clear": "maintenance", "clear-legacy": "maintenance",
    "adopt": "maintenance",
    "revert": "steps", "redo": "steps",
    "import": "agents",
    "completion": "complete",
    "check": "check", "doctor": "doctor",
    "hooks": "hooks", "hook": "hooks",
    "remote": "remote", "push": "remote", "fetch": "remote",
    "mcp": "mcpserve",
    "ui": "ui",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))

# The mount and the MCP server serve for hours (idle between requests) and guard their reads
# themselves (store.objects.odbguard, patched libgit2), as `rewind ui` waits for a person's
# keys; --help and completion only print.
UNWATCHED = {"mount", "umount", "completion", "mcp", "ui"}
# Commands that start no automatic import of other agents' snapshots (config auto_import).
NO_AUTO_IMPORT = {"import", "mount", "umount", "completion", "config", "check", "clear", "mcp",
                  "doctor"}


class RewindGroup(click.Group):
    """Loads a command's module on first use; turns failures into one line on stderr and
    an exit code (cli.failure): never a traceback, except for a bug. Damage met on the way
    that did not stop the command (store.objects.notices: a broken history) is said after
    it, one warning line each; a command that fails says only why it failed (its one line
    names the damage)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            module = importlib.import_module(f"rewindfs.cli.commands.{COMMANDS[name]}")
            for command in module.COMMANDS:
                self.add_command(command)
        return self.commands.get(name)

    def invoke(self, ctx: click.Context):
        # From here on Ctrl-C raises KeyboardInterrupt, so whatever the command holds (a
        # capture's temp files, a lock) is let go of before `rewind: interrupted`.
        try:
            with interrupts.raising():
                return self._invoke_reporting(ctx)
        except KeyboardInterrupt as exc:
            # Raised after the command's own handling (while its notices are said, as the
            # block ends): click would end with "Aborted!" and status 1.
            sys.exit(failure.handle(ctx.obj, exc))

    def _invoke_reporting(self, ctx: click.Context):
        try:
            result = super().invoke(ctx)
        except click.exceptions.Exit as exc:
            if exc.exit_code == 0:
                _say_notices(ctx)
            raise
        except (click.exceptions.ClickException, click.exceptions.Abort):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            code = failure.handle(ctx.obj, exc)
            if code is None:
                raise
            sys.exit(code)
        _say_notices(ctx)
        return result


def _say_notices(ctx: click.Context) -> None:
    from rewindfs.cli.app import App

    app = ctx.obj
    if isinstance(app, App):
        for message in app.notices:
            app.term.warn(message)


def load_all() -> click.Group:
    """The group with every command loaded (for the generated docs and their tests)."""
    for name in COMMANDS:
        rewind.get_command(click.Context(rewind), name)
    return rewind


@click.group(cls=RewindGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=examples(
                 "rewind list                       # checkpoints here, 1 = newest",
                 "rewind diff 3                     # what changed since checkpoint 3",
                 "rewind restore 3 src/app.py       # one file back; `rewind undo` reverses",
                 "rewind log src/app.py             # the checkpoints that changed a file",
                 "rewind show '1 hour ago':setup.py # a file as it was an hour ago",
                 "rewind mount && ls ~/.hermes/mnt/",
                 "man rewind                        # the manual (MANPATH: docs/guide.md)",
             ))
@click.option("--home", type=click.Path(file_okay=False), envvar="HERMES_HOME",
              help="Hermes home holding checkpoints/ (default $HERMES_HOME or ~/.hermes).")
@click.option("--color", type=click.Choice(COLOR_CHOICES), default="auto", metavar="WHEN",
              help="Colour: auto (on a terminal, unless NO_COLOR is set), always or never.")
@click.option("--no-pager", is_flag=True,
              help="Print long output directly instead of through $PAGER (less -FRX).")
@click.version_option(__version__, package_name="rewindfs")
@click.pass_context
def rewind(ctx: click.Context, home: str | None, color: str, no_pager: bool) -> None:
    """rewindfs: checkpoints of your working directory you can list, diff, mount and restore."""
    from rewindfs.cli import watchdog
    from rewindfs.cli.app import App
    from rewindfs.cli.output.feedback import lock_waits
    from rewindfs.store.objects import notices

    if ctx.invoked_subcommand not in UNWATCHED:
        watchdog.start()
    ctx.obj = App(home, color, not no_pager)
    # Any command may wait on another process's lock: say so on a terminal.
    ctx.with_resource(lock_waits(ctx.obj.term, list(COMMANDS), ctx.invoked_subcommand))
    # Damage met on the way (a broken history): one warning line each, after the command.
    ctx.with_resource(notices.listening(ctx.obj.notices.append))
    if ctx.invoked_subcommand not in NO_AUTO_IMPORT:
        # Once the command is done: its flags are in the settings by then, and it never
        # waits for the (detached) import.
        ctx.call_on_close(ctx.obj.auto_import)


def run(args: list[str], prog_name: str) -> None:
    rewind.main(args=args, prog_name=prog_name)
