"""The `rewind` command line: one thin command per verb; the logic lives below it.

Exit codes: 0 success, 1 an error you can act on (unknown checkpoint, bad path,
refused operation), 2 bad usage, 3 store unreadable or unwritable, 4 busy,
130 interrupted.

This module is the entry point, and a hook may start it on every tool call of an agent,
so it imports nothing: Ctrl-C is taken over first (see cli.interrupts), `--version` and
`--help` are answered without click (cli.quick, from help texts rendered by click and kept
as data), everything else is handed to the resident process, which has it all imported
(resident.client), and what it cannot serve goes to the click group here (cli.group), which
imports a command's module only when that command runs.
"""

# First thing: Ctrl-C ends the process at once from here on (cli.interrupts, which imports
# nothing that an interrupt could cut short).
from rewindfs.cli import interrupts

interrupts.install()


def main(args: list[str] | None = None, prog_name: str | None = None) -> None:
    """`rewind ARGS...` (default: the process's arguments); exits with the command's status."""
    import os
    import sys

    if args is None:
        args = sys.argv[1:]
    prog_name = prog_name or os.path.basename(sys.argv[0])
    from rewindfs.cli import quick

    answer = quick.answer(args, prog_name)
    if answer is not None:
        sys.exit(quick.write(answer))
    from rewindfs.resident import client

    served = client.run(args, prog_name)   # by the resident process, if one can
    if served is not None:
        # Nothing of the command ran here: ended without the interpreter's teardown (~10 ms).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(served)
    from rewindfs.cli.group import run

    if not client.inside and os.environ.get("REWIND_NO_SERVER") != "1":
        # Run here, a capture still asks the resident process's watch, when one is up.
        from rewindfs.store.capture import changesource

        changesource.register_later(_resident_source)

    run(args, prog_name)


def _resident_source():
    from rewindfs.resident.source import remote_if_up

    return remote_if_up()
