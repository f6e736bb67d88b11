"""`rewind ui`: the timeline to look at after something went wrong (rewindfs.ui; textual
is imported only here, when the command runs)."""

from __future__ import annotations

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples
from rewindfs.cli.options import dir_option


@click.command(epilog=examples(
    "rewind ui                  # the project around the current directory",
    "rewind ui -C ~/src/app",
    "rewind ui -C @origin/app   # a project fetched from remote origin",
))
@dir_option
@click.pass_obj
def ui(app: App, directory: str | None) -> None:
    """Browse checkpoints, their files and diffs; restore, undo and revert with a key.

    The timeline (newest first, grouped by agent turn), the files that differ between
    the selected checkpoint and the working tree, and the selected file's diff. r
    restores the file or the whole checkpoint, u undoes the last restore, t reverts an
    agent turn: each shows its plan and asks y/n first, and takes a pre-rollback
    snapshot. ? lists every key. Needs a terminal (80x24 is enough; NO_COLOR is kept).
    """
    from rewindfs.cli.target import resolve
    from rewindfs.ui.run import run

    run(app, resolve(app, directory))


COMMANDS = [ui]
