"""Options shared by many commands, spelled and documented once."""

from __future__ import annotations

import click

from rewindfs.cli.output.term import COLOR_CHOICES


def dir_option_named(dest: str):
    return click.option(
        "-C", "--dir", dest, type=click.Path(), metavar="DIR",
        help="The project (default: the project around the current directory).")


dir_option = dir_option_named("directory")

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


def _set_color(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_object(_app_type()).term.color = value


def _set_no_pager(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.find_object(_app_type()).term.pager = False


def _app_type():
    from rewindfs.cli.app import App

    return App


color_option = click.option(
    "--color", type=click.Choice(COLOR_CHOICES), expose_value=False, callback=_set_color,
    is_eager=True, metavar="WHEN",
    help="Colour: auto (on a terminal, unless NO_COLOR is set), always or never.")

no_pager_option = click.option(
    "--no-pager", is_flag=True, expose_value=False, callback=_set_no_pager, is_eager=True,
    help="Print long output directly instead of through $PAGER (less -FRX).")


def output_options(fn):
    """--color and --no-pager (also accepted before the command, as git does)."""
    return color_option(no_pager_option(fn))


def refuse_together(**given: object) -> None:
    """Refuse contradictory flags: usage error (exit 2) naming them."""
    named = [name for name, value in given.items() if value]
    if len(named) > 1:
        raise click.UsageError(f"{' and '.join(named)} cannot be used together")


class PathsAfterDoubleDash(click.Command):
    """`rewind diff A B -- PATH...`: what follows `--` is paths (in ctx.meta["paths"]),
    as in git."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta["paths"] = args[at + 1:]
            args = args[:at]
        return super().parse_args(ctx, args)
