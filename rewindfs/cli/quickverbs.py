"""The common verbs answered before click, without pygit2: `rewind list [--json]` off a
terminal and `rewind cat REF PATH` from the store read in Python (store.history.quickread),
`rewind checkpoint [-m REASON] [--json]` when the project's stat stamp names what changed
since its newest checkpoint (store.history.stamp; a change is captured by the agent hooks'
resident helper, hooks.helper), and `rewind hook AGENT`.

Only their plainest spelling is recognised here (no global options, no -C, nothing that
starts with a dash where click could read an option, no other agent's `kilo:N` step), and
only what the quick reader is sure of is answered: anything else returns None before a
byte is printed, and the click command does the whole job (cli.group). That includes an
error or a warning to report, a history broken in the middle or any object, label or
record the reader cannot read (store.history.quickread hands over; a notice met on the
way, store.objects.notices, hands over too: the click command says it), and settings
asking for the automatic import of other agents' snapshots (`auto_import`, which the
click command starts once it is done). The output is the click command's, byte for byte
(tests/cli/test_cli_quickverbs.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rewindfs.cli.widths import isatty

if TYPE_CHECKING:
    from pathlib import Path

    from rewindfs.cli.app import App
    from rewindfs.store.objects import rawodb


def answer(args: list[str]) -> bytes | None:
    """What `rewind ARGS` prints, when it can be told here; else None (nothing printed)."""
    if not args or "_REWIND_COMPLETE" in os.environ or not _home_ok():
        return None
    verb = VERBS.get(args[0])
    if verb is None:
        return None
    from rewindfs.errors import RewindError
    from rewindfs.store.objects import notices, rawodb

    said: list[str] = []
    try:
        with notices.listening(said.append):
            answer = verb(args[1:])
    except (rawodb.Unsure, RewindError, OSError, ValueError):
        return None  # click's command reads with libgit2 and says what is wrong
    return None if said else answer  # damage to report: the click command says it


def _home_ok() -> bool:
    """--home's checks on $HERMES_HOME (click.Path(file_okay=False)): an existing file
    is click's error to report."""
    home = os.environ.get("HERMES_HOME")
    return not home or not os.path.isfile(home)


def _project() -> tuple[App, Path, rawodb.RawOdb | None]:
    """The invocation's App, the project around the current directory and the store's
    Python reader (None: no store yet). Unsure when loading the settings has something
    to say: the click command shows it."""
    from rewindfs import config
    from rewindfs.cli.app import App
    from rewindfs.store.objects import rawodb

    settings = config.load(None, {})
    if settings.warnings:
        raise rawodb.Unsure("warnings about the settings")
    if settings.auto_import:
        raise rawodb.Unsure("the automatic import is the click command's to start")
    app = App(None, settings=settings)
    return app, app.project_dir(None), rawodb.open_store(app.layout)


def _list(rest: list[str]) -> bytes | Stream | None:
    if rest not in ([], ["--json"]):
        return None
    as_json = rest == ["--json"]
    if not as_json and isatty(sys.stdout):
        return None  # colour and the pager: rich's (cli.listing.print_rich)
    from rewindfs.cli import listing
    from rewindfs.store.history import quickread
    from rewindfs.store.objects import rawodb

    app, workdir, odb = _project()

    def size(h16: str, cp) -> int:
        found = quickread.cached_size(app.layout, h16, cp.id)
        if found is None:
            raise rawodb.Unsure("no cached size")  # libgit2's path computes and caches it
        return found

    from rewindfs.fs.locate import our_mount

    target = listing.Local(workdir)
    mount = our_mount(app.settings.mount_dir)
    found = None
    if odb is not None and not as_json and mount is None:
        from rewindfs.store.history import Surprise

        try:
            page = quickread.page(odb, target.key)
            if page is not None and page.rows > listing.EXACT_ROWS:
                return _paged(app, target, page, size)
            found = list(page) if page is not None else None
        except Surprise:
            found = None  # the records mislead: the commits say
    if found is None:
        found = quickread.checkpoints(odb, target.key, summarize=True) if odb else []
    report = [(target, listing.listed(target, found, quickread.stats, size, mount))]
    if as_json:
        return (listing.as_json(report, False) + "\n").encode()
    text = listing.plain(report)
    return None if text is None else text.encode()


class Stream:
    """A quick answer written a chunk at a time (cli.quick.write): `first` is made before
    anything is written (anything unsure there hands over to click), the rest as the
    reader takes it."""

    def __init__(self, first: bytes, rest: Iterator[str], cut: Callable[[Exception], str]):
        self.first, self.rest, self.cut = first, rest, cut

    def __iter__(self) -> Iterator[bytes]:
        yield self.first
        for chunk in self.rest:
            yield chunk.encode()

    def reader_gone(self) -> bool:
        """Whether stdout's reader has gone (cli.rowstream.reader_gone): nothing more to make."""
        from rewindfs.cli.rowstream import reader_gone

        return reader_gone(sys.stdout)


def _paged(app: App, target, page, size) -> Stream:
    """A long history's list, its first screen made here (cli.listing.plain_paged)."""
    from rewindfs.cli import listing
    from rewindfs.store.history import quickread
    from rewindfs.store.objects import rawodb

    if not target.title.isprintable():
        raise rawodb.Unsure("a title only rich prints")
    for oid, root in [(page.summary.bottom, page.summary.root),
                      *((r.id, r.parent is None) for r in page.pinned)]:
        if root and quickread.cached_size(app.layout, target.key, oid) is None:
            raise rawodb.Unsure("no cached size")  # before a row is printed
    chunks = listing.plain_paged(target.title, listing.paged(target, page, quickread.stats,
                                                             size))
    first = next(chunks) + next(chunks, "")

    def cut(exc: Exception) -> str:
        quickread.drop_records(app.layout.store, target.key)
        return listing.cut_short(exc)

    return Stream(first.encode(), chunks, cut)


def _cat(rest: list[str]) -> bytes | None:
    if len(rest) != 2 or any(arg.startswith("-") or not arg for arg in rest) or ":" in rest[0]:
        return None  # (a colon: another agent's step, `kilo:3`, or a time; click's to read)
    from rewindfs.cli.app import cli_relative
    from rewindfs.store.history import quickread
    from rewindfs.store.objects import project_hash

    _, workdir, odb = _project()
    if odb is None:
        return None
    checkpoint = quickread.resolve(odb, project_hash(workdir), rest[0])
    return quickread.read_file(odb, checkpoint, cli_relative(workdir, rest[1]))


def _checkpoint(rest: list[str]) -> bytes | None:
    """`rewind checkpoint [-m REASON] [--json]` when the project's stat stamp names what
    changed since its newest checkpoint (hooks.plain): nothing (the project's record
    touched; no repository opened), or a few paths, which the agent hooks' resident helper
    captures with pygit2 already loaded. With a helper up, the helper decides both (it has
    the modules loaded); with none, nothing changed is answered here, and for a change one
    is started for the next call and the click command takes this one."""
    options = _checkpoint_options(rest)
    if options is None:
        return None
    reason, as_json = options
    from types import SimpleNamespace

    from rewindfs.cli import taken
    from rewindfs.hooks import helper

    told = helper.take_plain(os.getcwd(), reason, HELPER_TIMEOUT)
    if told is not None:
        outcome = told["result"]
    else:
        from rewindfs.hooks import plain

        found = plain.look(os.getcwd())
        if found is None:
            return None
        if found.changed[2]:
            if helper.enabled():
                helper.start()  # for the next one; the click command takes this one
            return None
        outcome = found.unchanged(reason)
    if outcome is None:
        return None
    said = outcome.pop("notices", None) or []  # damage the helper met (cli.group says it)
    result = SimpleNamespace(**outcome)  # a SnapshotResult's fields (not its imports)
    if result.skipped_files or said:
        from rewindfs.cli.term import Terminal

        for warning in [*taken.warnings(result), *said]:
            Terminal().warn(warning)
    if as_json:
        return (taken.as_json(result, None) + "\n").encode()
    return "".join(f"{line}\n" for line in taken.lines(result, reason, None)).encode()


def _checkpoint_options(rest: list[str]) -> tuple[str, bool] | None:
    """(reason, --json) from `-m REASON`, `--message REASON`, `--message=REASON`,
    `--json`; None for anything else (click's to parse)."""
    from rewindfs.cli.taken import DEFAULT_REASON

    reason, as_json, i = None, False, 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--json" and not as_json:
            as_json = True
        elif arg in ("-m", "--message") and reason is None and i + 1 < len(rest) \
                and not rest[i + 1].startswith("-"):
            reason = rest[i + 1]
            i += 1
        elif arg.startswith("--message=") and reason is None:
            reason = arg.partition("=")[2]
        else:
            return None
        i += 1
    return (DEFAULT_REASON if reason is None else reason), as_json


def _diff(rest: list[str]) -> bytes | None:
    """`rewind diff --stat` off a terminal: the newest checkpoint against the working tree,
    when the project's stat stamp names what changed (store.history.quickdiff)."""
    if rest != ["--stat"] or isatty(sys.stdout):
        return None
    from rewindfs.cli.widths import stat_width
    from rewindfs.hooks.fast import settings_key
    from rewindfs.store.history import diffstat, quickdiff
    from rewindfs.store.objects import project_hash

    app, workdir, odb = _project()
    if odb is None:
        return None
    _, files = quickdiff.since_newest(odb, project_hash(workdir), workdir,
                                      settings_key(workdir), app.settings.max_file_size_bytes)
    if not files:
        return b"no changes\n"
    shown = [row.text() for row in diffstat.stat_rows(files, stat_width())]
    return "".join(f"{line}\n" for line in [*shown, diffstat.summary(files)]).encode()


def _hook(rest: list[str]) -> bytes | None:
    """`rewind hook AGENT`: the agent hooks' own entry (rewindfs.hooks.entry, what the
    installed hooks run as `python -m rewindfs.hooks`), which answers and exits itself."""
    if len(rest) != 1 or rest[0].startswith("-"):
        return None
    from rewindfs.cli import interrupts
    from rewindfs.hooks.entry import main

    with interrupts.raising():  # the entry never fails the agent, Ctrl-C included
        code = main(rest)
    sys.exit(code)


# How long `rewind checkpoint` waits for the helper's checkpoint before taking it itself.
HELPER_TIMEOUT = 120.0

VERBS: dict[str, Callable[[list[str]], bytes | None]] = {
    "list": _list, "cat": _cat, "checkpoint": _checkpoint, "diff": _diff, "hook": _hook}

