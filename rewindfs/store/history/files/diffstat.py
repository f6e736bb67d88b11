"""`git diff --stat` as git prints it: the same columns, scaling and summary line.

libgit2's own stat format differs from git's (number column, graph scaling, an
extra create/delete summary), so people comparing with `git diff --stat` saw
different bars. This follows git's layout rules (diff.c show_stats): the name
column takes what it needs up to 5/8 of the width when space is short, the graph
is scaled linearly so every changed file shows at least one mark, and a file
that only lost lines shows only `-`.

Rows come back as segments so a terminal can colour the `+` and `-` runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from rewindfs.store.history.files.quoting import quote_path


@dataclass
class FileStat:
    old_path: bytes
    new_path: bytes
    added: int
    deleted: int
    binary: bool = False
    old_size: int = 0
    new_size: int = 0

    @property
    def renamed(self) -> bool:
        return self.old_path != self.new_path


@dataclass
class StatRow:
    head: str  # " name | " padded, up to and including the count column
    plus: int  # number of '+' marks
    minus: int  # number of '-' marks
    tail: str = ""  # binary: "Bin 3000 -> 1000 bytes"

    def text(self) -> str:
        return self.head + "+" * self.plus + "-" * self.minus + self.tail


def print_name(f: FileStat) -> str:
    if not f.renamed:
        return quote_path(f.new_path)
    return rename_name(f.old_path, f.new_path)


def rename_name(a: bytes, b: bytes) -> str:
    """`pfx{old => new}sfx` with the common leading and trailing path parts outside."""
    qa, qb = quote_path(a), quote_path(b)
    if qa.startswith('"') or qb.startswith('"'):
        return f"{qa} => {qb}"
    prefix = 0
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            break
        if x == ord("/"):
            prefix = i + 1
    suffix = 0
    # With a common prefix (ending in "/"), the suffix scan may reach that slash.
    floor = prefix - (1 if prefix else 0)
    i, j = len(a) - 1, len(b) - 1
    while i >= floor and j >= floor and a[i] == b[j]:
        if a[i] == ord("/"):
            suffix = len(a) - i
        i -= 1
        j -= 1
    a_mid = a[prefix:max(prefix, len(a) - suffix)]
    b_mid = b[prefix:max(prefix, len(b) - suffix)]
    middle = f"{a_mid.decode()} => {b_mid.decode()}"
    if prefix or suffix:
        return f"{a[:prefix].decode()}{{{middle}}}{a[len(a) - suffix:].decode()}"
    return middle


def _scale(value: int, width: int, max_change: int) -> int:
    # At least one mark for any change: scale as if one column narrower, then add one.
    return 0 if not value else 1 + (value * (width - 1)) // max_change


def stat_rows(files: list[FileStat], width: int = 80) -> list[StatRow]:
    if not files:
        return []
    names = [print_name(f) for f in files]
    max_len = max(len(n) for n in names)
    max_change = 0
    number_width = 0
    bin_width = 0
    for f in files:
        if f.binary:
            bin_width = max(bin_width, 14 + len(str(f.new_size)) + len(str(f.old_size)))
            number_width = 3  # counts line up with "Bin"
        else:
            max_change = max(max_change, f.added + f.deleted)
    number_width = max(number_width, len(str(max_change)))
    width = max(width, 16 + 6 + number_width)
    graph_width = max_change if max_change + 4 > bin_width else bin_width - 4
    name_width = max_len
    if name_width + number_width + 6 + graph_width > width:
        if graph_width > width * 3 // 8 - number_width - 6:
            graph_width = max(6, width * 3 // 8 - number_width - 6)
        if name_width > width - number_width - 6 - graph_width:
            name_width = width - number_width - 6 - graph_width
        else:
            graph_width = width - number_width - 6 - name_width
    rows = []
    for f, name in zip(files, names, strict=True):
        shown, prefix = name, ""
        if len(name) > name_width:
            keep = name_width - 3
            shown = name[len(name) - keep:]
            slash = shown.find("/")
            if slash >= 0:
                shown = shown[slash:]
            prefix = "..."
        pad = name_width - len(prefix) if prefix else name_width
        head = f" {prefix}{shown:<{pad}} |"
        if f.binary:
            rows.append(StatRow(f"{head} {'Bin':>{number_width}}", 0, 0,
                                f" {f.old_size} -> {f.new_size} bytes"
                                if f.old_size or f.new_size else ""))
            continue
        add, dele = f.added, f.deleted
        if graph_width <= max_change:
            total = _scale(add + dele, graph_width, max_change)
            if total < 2 and add and dele:
                total = 2
            if add < dele:
                add = _scale(add, graph_width, max_change)
                dele = total - add
            else:
                dele = _scale(dele, graph_width, max_change)
                add = total - dele
        count = f.added + f.deleted
        rows.append(StatRow(f"{head} {count:>{number_width}}{' ' if count else ''}", add, dele))
    return rows


def summary(files: list[FileStat]) -> str:
    n = len(files)
    if not n:
        return " 0 files changed"
    ins = sum(f.added for f in files if not f.binary)
    dels = sum(f.deleted for f in files if not f.binary)
    text = f" {n} file{'' if n == 1 else 's'} changed"
    if ins or not dels:
        text += f", {ins} insertion{'' if ins == 1 else 's'}(+)"
    if dels or not ins:
        text += f", {dels} deletion{'' if dels == 1 else 's'}(-)"
    return text


def render(files: list[FileStat], width: int = 80) -> str:
    """The whole `--stat` block as plain text (no trailing newline); "" for no changes."""
    if not files:
        return ""
    return "\n".join([*(r.text() for r in stat_rows(files, width)), summary(files)])
