"""How `rewind log` lays out the changes of one path: one row per checkpoint or agent step
(number, id, age, status, lines added and removed, reason), streamed as one table by
cli.output.rowstream."""

from __future__ import annotations

from rewindfs.cli.output import rowstream

JUSTIFY = ("right", "left", "right", "left", "left", "left")


def line_counts(binary: bool, added: int, deleted: int) -> rowstream.Cell:
    if binary:
        return (("binary", ""),)
    return ((f"+{added}", "green"), (" ", ""), (f"-{deleted}", "red"))


def print_log(term, console, title: str, rows: list[list[rowstream.Cell]]) -> None:
    """The title line, then `rows` as one table."""
    rowstream.print_line(console, title, "bold")
    rowstream.print_rows(term, console, JUSTIFY, [rowstream.texts_of(row) for row in rows],
                         rows.__getitem__)
