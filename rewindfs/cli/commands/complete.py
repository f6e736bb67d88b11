"""Shell completion: checkpoint numbers, ids and labels for REF arguments, and
`rewind completion SHELL` printing the script to load.

    eval "$(rewind completion bash)"      # ~/.bashrc
    eval "$(rewind completion zsh)"       # ~/.zshrc
    rewind completion fish | source       # ~/.config/fish/config.fish

Completion runs without the group's callback (click parses leniently), so the
store is opened here from the --home / -C given so far on the command line.
"""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem, get_completion_class

SHELLS = ("bash", "zsh", "fish")


def complete_reference(ctx: click.Context, _param: click.Parameter, incomplete: str
                       ) -> list[CompletionItem]:
    """Numbers (with their reason as help), labels and short ids of the project."""
    try:
        found = _checkpoints(ctx)
    except Exception:  # noqa: BLE001 - completing must never print a traceback in a shell
        return []
    items: list[CompletionItem] = []
    for cp in found:
        if cp.number:
            items.append(CompletionItem(str(cp.number), help=cp.reason))
        items.extend(CompletionItem(label, help=f"label of {cp.short}") for label in cp.labels)
        items.append(CompletionItem(cp.short, help=cp.reason))
    items.append(CompletionItem("latest", help="the newest checkpoint"))
    return [i for i in items if i.value.startswith(incomplete)]


def _checkpoints(ctx: click.Context):
    from rewindfs import store as st
    from rewindfs.cli.app import App

    root = ctx.find_root()
    app = App(root.params.get("home"))
    directory = None
    for context in (ctx, *_parents(ctx)):
        directory = directory or context.params.get("directory") \
            or context.params.get("directory_opt")
    workdir = app.project_dir(directory)
    if not app.store.exists():
        return []
    return st.checkpoints(app.store.repo, st.project_hash(workdir))


def _parents(ctx: click.Context):
    while ctx.parent is not None:
        ctx = ctx.parent
        yield ctx


@click.command(epilog="\b\nExamples:\n  eval \"$(rewind completion bash)\"    # in ~/.bashrc\n"
                      "  eval \"$(rewind completion zsh)\"     # in ~/.zshrc\n"
                      "  rewind completion fish | source     # in fish's config.fish")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell code that completes rewind's commands, options, checkpoint numbers,
    ids and labels."""
    cls = get_completion_class(shell)
    assert cls is not None
    root = ctx.find_root().command
    click.echo(cls(root, {}, "rewind", "_REWIND_COMPLETE").source())


COMMANDS = [completion]
