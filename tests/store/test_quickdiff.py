"""Lines added and removed, counted in Python (store.history.quickdiff) exactly as libgit2's
xdiff counts them, or not at all (Unsure): random edits of files full of repeated lines,
checked against libgit2's own patch of the same bytes."""

from __future__ import annotations

import pygit2
from hypothesis import given, settings
from hypothesis import strategies as s

from rewindfs.store.history.quickdiff import line_changes
from rewindfs.store.objects.rawodb import Unsure

LINES = [b"a\n", b"b\n", b"\n", b"}\n", b"    return x\n", b"def f():\n",
         *(f"line {i}\n".encode() for i in range(40))]
EDIT = s.tuples(s.sampled_from(["insert", "delete", "replace"]), s.integers(0, 10_000),
                s.sampled_from(LINES))


def edited(old: list[bytes], edits: list[tuple[str, int, bytes]]) -> list[bytes]:
    new = list(old)
    for kind, at, line in edits:
        if kind == "insert":
            new.insert(at % (len(new) + 1), line)
        elif new:
            if kind == "delete":
                del new[at % len(new)]
            else:
                new[at % len(new)] = line
    return new


@settings(max_examples=400, deadline=None)
@given(s.lists(s.sampled_from(LINES), max_size=300), s.lists(EDIT, max_size=40),
       s.booleans(), s.booleans())
def test_counts_are_libgit2s(old, edits, cut_old, cut_new):
    a, b = b"".join(old), b"".join(edited(old, edits))
    a = a[:-1] if cut_old and a.endswith(b"\n") else a  # no newline at the end
    b = b[:-1] if cut_new and b.endswith(b"\n") else b
    try:
        mine = line_changes(a, b)
    except Unsure:
        return
    _, added, deleted = pygit2.Patch.create_from(a, b).line_stats
    assert mine == (added, deleted)


def test_binary_and_huge_edits_are_left_to_libgit2():
    for old, new in [(b"a\0b\n", b"a\n"), (b"\xff\xfetext", b"x\n"),
                     (b"".join(f"{i}\n".encode() for i in range(1000)), b"x\n")]:
        try:
            line_changes(old, new)
        except Unsure:
            continue
        raise AssertionError(f"counted {old[:10]!r} -> {new[:10]!r}")
