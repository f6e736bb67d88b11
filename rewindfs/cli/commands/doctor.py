"""`rewind doctor`: is this machine ready, one line per concern (rewindfs.doctor)."""

from __future__ import annotations

import json
import sys

import click

from rewindfs.cli.app import App
from rewindfs.cli.help import examples

MARKS = {"ok": "ok", "warn": "warn", "off": "--", "fail": "FAIL"}


def _shown(text: str) -> str:
    """`text` with anything a terminal would act on escaped (paths come from outside)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else
                   f"\\u{ord(c):04x}" for c in text)


@click.command(epilog=examples(
    "rewind doctor                  # one screen: FUSE, builds, store, hooks, remotes",
    "rewind doctor --json           # the same, for scripts",
    "rewind doctor --allow-other    # also: may the mount be shared with other users",
))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--allow-other", is_flag=True,
              help="Also check that FUSE lets the mount be shared with other users "
                   "(user_allow_other, for `rewind mount --allow-other`).")
@click.pass_obj
def doctor(app: App, as_json: bool, allow_other: bool) -> None:
    """Is this machine ready: FUSE, the pygit2 and pyfuse3 builds in use (patched or
    stock), the store (size, last check, free space), the hooks' helper, each agent's
    hook and the remotes, each problem with the command that fixes it.

    Exit status 0 when nothing blocks checkpoints, 1 when something does.
    """
    from rewindfs import doctor as checkup

    checks = checkup.everything(app.settings.base, allow_other)
    ready = checkup.ready(checks)
    if as_json:
        click.echo(json.dumps({"ready": ready, "checks": [c.to_dict() for c in checks]},
                              indent=2))
    else:
        click.echo("rewind doctor: " + ("ready: nothing blocks checkpoints" if ready else
                                        "NOT READY: checkpoints are blocked (FAIL below)"))
        width = max(len(c.name) for c in checks)
        for c in checks:
            fix = f" (fix: {c.fix})" if c.fix and c.status != "ok" else ""
            click.echo(_shown(f"{MARKS[c.status]:<4}  {c.name:<{width}}  {c.detail}{fix}"))
    sys.exit(0 if ready else 1)


COMMANDS = [doctor]
