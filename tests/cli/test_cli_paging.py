"""Long listings stream (cli.output.rowstream): what a reader of the first lines gets (`| head`,
a pager quitting after a screen) is exactly the start of the whole listing, and the
listing printed a chunk at a time is the one table printed at once."""

from __future__ import annotations

import io
import os
import subprocess
import time
from pathlib import Path

import forkrun
import pygit2
import pytest
from conftest import REWIND, rewind_env
from rich.console import Console
from rich.table import Table
from rich.text import Text
from terminal import PtyProcess

from rewindfs.cli.output import rowstream
from rewindfs.cli.output.term import Terminal
from rewindfs.store import Layout, project_hash, set_label, take
from rewindfs.store.history.files.treestats import tree_stats
from rewindfs.store.history.trailers import STATS_TRAILER, compose_message

HISTORY = 260  # more rows than the first chunks (60, 60, 120)


@pytest.fixture
def long_history(store, project) -> Path:
    """`HISTORY` checkpoints written as rewindfs (with their stats trailer) and Hermes
    (without: their stats come from the records) write them, a label and a pre-rollback
    snapshot among them, all 3.5 days old (their ages do not change during the test)."""
    take(store, project, "first")
    repo = pygit2.Repository(str(store.layout.store))
    ref = Layout.project_ref(project_hash(project))
    when = int(time.time()) - 84 * 3600
    taken = repo.references[ref].peel(pygit2.Commit)
    # Dated with the rest: an age of now would cross 9s/10s or 59s/1m (a wider column)
    # between two runs of a slow test.
    sig = pygit2.Signature("hermes", "hermes@local", when - 60, 60)
    parent = repo[repo.create_commit(None, sig, sig, taken.message, taken.tree_id, [])]
    for n in range(HISTORY - 1):
        blob = repo.create_blob(f"line {n}\n".encode() * (n % 5 + 1))
        builder = repo.TreeBuilder(parent.tree)
        builder.insert(f"notes{n % 7}.txt", blob, pygit2.enums.FileMode.BLOB)
        tree = builder.write()
        sig = pygit2.Signature("hermes", "hermes@local", when + n * 30, 60)
        subject = "pre-rollback snapshot (restoring to 0123abcd)" if n == 100 else \
            f"before terminal: step {n} " + "x" * (n % 40)
        trailers = {} if n % 2 else \
            {STATS_TRAILER: tree_stats(repo, str(parent.tree_id), str(tree)).encode()}
        oid = repo.create_commit(None, sig, sig, compose_message(subject, trailers), tree,
                                 [parent.id])
        parent = repo[oid]
        if n == 50:
            set_label(store, project_hash(project), "milestone", str(oid))
    repo.references[ref].set_target(parent.id)
    return project


def shell(command: str, home: Path, tmp_path: Path, **env: str) -> bytes:
    fake = tmp_path / "user-home"
    fake.mkdir(exist_ok=True)
    return subprocess.run(["sh", "-c", command], env=rewind_env(home, fake, TERM="xterm", **env),
                          capture_output=True, check=True, timeout=120).stdout


def through_head(args: list[str], env: dict[str, str], lines: int) -> bytes:
    """What `head -n LINES` reads of `rewind ARGS | head -n LINES`: a real pipe to a real
    head, which stops reading early; the run forked from the tests' fork server (how a
    listing meets a reader that went away is the point here, not its start-up)."""
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as source:
        head = subprocess.Popen(["head", "-n", str(lines)], stdin=source,
                                stdout=subprocess.PIPE)
    try:
        forkrun.run(REWIND, args, env=env, timeout=120, stdout=write_end)
    finally:
        os.close(write_end)
    out, _ = head.communicate(timeout=120)
    assert head.returncode == 0
    return out


@pytest.mark.parametrize("args", [("list",), ("log", "."), ("log", "notes3.txt")])
def test_the_first_lines_through_head_are_the_start_of_the_whole(long_history, home,
                                                                   tmp_path, args):
    env = rewind_env(home, tmp_path / "user-home", TERM="xterm")
    command = [*args, "-C", str(long_history)]
    whole = forkrun.run(REWIND, command, env=env, timeout=120, text=False)
    assert whole.returncode == 0, whole.stderr
    whole = whole.stdout.splitlines()
    assert len(whole) > 30
    for n in (1, 5, 61, 150):
        assert through_head(command, env, n).splitlines() == whole[:n]


def test_a_pager_reading_one_screen_sees_the_start_of_the_whole(long_history, home,
                                                                  tmp_path):
    out = tmp_path / "screen"
    fake = tmp_path / "user-home"
    fake.mkdir(exist_ok=True)
    proc = PtyProcess([REWIND, "list", "-C", str(long_history)], columns=100,
                      env=rewind_env(home, fake, TERM="xterm", PAGER=f"head -n 40 > {out}"))
    assert proc.wait() == 0
    screen = out.read_bytes().splitlines()
    whole = shell(f"{REWIND} --color always list -C {long_history}", home, tmp_path,
                  COLUMNS="100").splitlines()
    assert len(whole) > 2 * len(screen) == 80  # the pager stopped reading early
    assert screen == whole[:40]
    assert b"\x1b[" in screen[1]  # in colour, as on the terminal


def _rows() -> list[list[rowstream.Cell]]:
    out = []
    for n in range(200):
        reason: rowstream.Cell = ((f"reason {n} " + "word " * (n % 13), "dim" if n % 9 else ""),
                                  *(((" [label]", "cyan"),) if n % 17 == 0 else ()))
        out.append([(("  ", ""), (f"{n}.", "bold")), rowstream.cell(f"{n:08x}", "yellow"),
                    rowstream.cell(f"{n % 50}m ago", "green"), reason,
                    () if n % 4 == 0 else ((f"{n} files, ", ""), (f"+{n}", "green"))])
    return out


def _printed(monkeypatch, colour: bool, width: int, first: int, last: int) -> str:
    monkeypatch.setattr(rowstream, "FIRST_CHUNK", first)
    monkeypatch.setattr(rowstream, "LAST_CHUNK", last)
    buffer = io.StringIO()
    term = Terminal("always" if colour else "never")
    console = Console(file=buffer, force_terminal=colour, no_color=not colour,
                      color_system="standard" if colour else None, width=width,
                      markup=False, emoji=False, highlight=False)
    rows = _rows()
    rowstream.print_rows(term, console, ("right", "left", "right", "left", "left"),
                         [rowstream.texts_of(row) for row in rows], rows.__getitem__, wrap=3)
    return buffer.getvalue()


@pytest.mark.parametrize("colour", [True, False])
@pytest.mark.parametrize("width", [200, 70, 10_000])
def test_printed_in_chunks_is_the_table_printed_at_once(monkeypatch, colour, width):
    at_once = _printed(monkeypatch, colour, width, 10**6, 10**6)
    assert at_once.count("\n") >= 200
    assert _printed(monkeypatch, colour, width, 3, 7) == at_once
    assert _printed(monkeypatch, colour, width, 60, 1000) == at_once


def test_plain_text_is_what_rich_prints_off_a_terminal():
    """The fast path (no rich) prints what one rich table prints, as the listing always
    did: wide characters, control codes, a tab (which only rich lays out), empty cells."""
    rows = [*_rows()[:30],
            [rowstream.cell("  9."), rowstream.cell("日本語"), rowstream.cell(""),
             rowstream.cell("bell\x07 and\x08 back"), rowstream.cell("é")],
            [rowstream.cell("  10."), rowstream.cell("a\tb"), rowstream.cell(""),
             rowstream.cell("x"), ()]]
    justify = ("right", "left", "right", "left", "left")
    term = Terminal("never")

    def console() -> tuple[io.StringIO, Console]:
        buffer = io.StringIO()
        return buffer, Console(file=buffer, force_terminal=False, no_color=True,
                               color_system=None, width=10_000, markup=False, emoji=False,
                               highlight=False)

    fast, fast_console = console()
    rowstream.print_rows(term, fast_console, justify, [rowstream.texts_of(r) for r in rows[:-1]],
                         rows.__getitem__, wrap=3)
    with_tab, tab_console = console()
    rowstream.print_rows(term, tab_console, justify, [rowstream.texts_of(r) for r in rows],
                         rows.__getitem__, wrap=3)
    for buffer, printed in ((fast, rows[:-1]), (with_tab, rows)):
        table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
        for i, side in enumerate(justify):
            table.add_column(justify=side, no_wrap=i != 3)
        for row in printed:
            table.add_row(*(Text.assemble(*cell) for cell in row))
        expected, expected_console = console()
        term.print_table(table, expected_console)
        assert buffer.getvalue() == expected.getvalue()
