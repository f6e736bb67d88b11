"""The `rewind` command line: one thin command per verb; the logic lives below it.

Exit codes: 0 success, 1 an error you can act on (unknown checkpoint, bad path,
refused operation), 2 bad usage, 3 store unreadable or unwritable, 4 busy,
130 interrupted.
"""

from __future__ import annotations

import sys

import click

from rewindfs.cli import failure, watchdog
from rewindfs.cli.app import App
from rewindfs.cli.feedback import lock_waits
from rewindfs.cli.help import examples
from rewindfs.cli.term import COLOR_CHOICES
from rewindfs.store.objects import notices


class RewindGroup(click.Group):
    """Turns failures into one line on stderr and an exit code (cli.failure): never a
    traceback, except for a bug. Damage met on the way that did not stop the command
    (store.objects.notices: a broken history) is said after it, one warning line each;
    a command that fails says only why it failed (its one line names the damage)."""

    def invoke(self, ctx: click.Context):
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
    app = ctx.obj
    if isinstance(app, App):
        for message in app.notices:
            app.term.warn(message)


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
@click.version_option(package_name="rewindfs")
@click.pass_context
def main(ctx: click.Context, home: str | None, color: str, no_pager: bool) -> None:
    """rewindfs: checkpoints of your working directory you can list, diff, mount and restore."""
    if ctx.invoked_subcommand not in UNWATCHED:
        watchdog.start()
    ctx.obj = App(home, color, not no_pager)
    # Any command may wait on another process's lock: say so on a terminal.
    ctx.with_resource(lock_waits(ctx.obj.term, main.commands))
    # Damage met on the way (a broken history): one warning line each, after the command.
    ctx.with_resource(notices.listening(ctx.obj.notices.append))
    if ctx.invoked_subcommand not in NO_AUTO_IMPORT:
        # Once the command is done: its flags are in the settings by then, and it never
        # waits for the (detached) import.
        ctx.call_on_close(ctx.obj.auto_import)


# The mount serves for hours and guards its reads itself (store.objects.odbguard, patched libgit2).
UNWATCHED = {"mount", "umount"}
# Commands that start no automatic import of other agents' snapshots (config auto_import).
NO_AUTO_IMPORT = {"import", "mount", "umount", "completion", "config", "check", "clear"}


# Each module lists its click commands in COMMANDS.
COMMAND_MODULES = ("checkpoints", "files", "restore", "show", "manage", "mount", "status",
                   "maintenance", "agents", "steps", "complete", "check", "hooks", "remote")


def _register() -> None:
    import importlib

    for name in COMMAND_MODULES:
        for command in importlib.import_module(f"rewindfs.cli.{name}").COMMANDS:
            main.add_command(command)


_register()
