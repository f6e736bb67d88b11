"""The files generated from the click commands, committed beside the code: where each
goes and what renders it. `scripts/gen_docs` writes them; tests/cli/test_cli_help.py fails
while a committed copy differs from what the commands render now."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from rewindfs.cli.help import helpsource, manpage, markdown

ROOT = Path(__file__).resolve().parents[3]

# path relative to the repository root -> renderer
GENERATED: dict[str, Callable[[click.Group], str]] = {
    "man/rewind.1": manpage.render,
    "docs/cli.md": markdown.render,
    "rewindfs/cli/help/helptexts.txt": helpsource.render,
}


def write(paths: list[str]) -> None:
    from rewindfs.cli.group import load_all

    group = load_all()
    for rel in paths or list(GENERATED):
        if rel not in GENERATED:
            raise SystemExit(f"gen_docs: {rel} is not generated (one of: {', '.join(GENERATED)})")
        target = ROOT / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        # Through a temp file: a failing render must not leave an empty page behind.
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(GENERATED[rel](group))
        os.replace(tmp, target)
        print(f"wrote {target}")


if __name__ == "__main__":
    write(sys.argv[1:])
