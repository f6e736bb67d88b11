"""Trees fetched from a remote are measured before anything walks them (issue 34, cases 1
and 5): a tree bomb, a tree 20,000 levels deep and a 2 GiB blob of zeros, all crafted
with plain git, end in one line or stream within bounded time and memory, asserted from
outside (a wall deadline on each `rewind`, its max RSS and its children's, from wait4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from crafted import Crafted, bounded, h16
from remote_servers import Machine

DEADLINE = 120.0  # seconds: every command here takes a few; a walk of a bomb never ends
RSS_MB = 400  # the unbounded versions grew to gigabytes within a minute


def fetched(tmp_path: Path, evil: Crafted) -> Machine:
    b = Machine(tmp_path, "b")
    b.rewind("remote", "add", "evil", evil.path)
    b.rewind("fetch", "evil", timeout=600)
    return b


def one_line(run, *expected: str) -> None:
    """A refusal: exit 1, one line on stderr saying `expected`, no traceback."""
    assert run.code == 1, (run.code, run.stdout[-500:], run.stderr[-2000:])
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rewind: "), run.stderr[-2000:]
    for text in expected:
        assert text in lines[0], lines[0]


def within(run) -> None:
    assert run.code is not None, f"still running after {DEADLINE} s: killed"
    assert run.max_rss_mb < RSS_MB, f"{run.max_rss_mb:.0f} MB"


def test_a_tree_bomb_is_listed_in_one_line_and_never_walked(tmp_path: Path):
    """9 tree objects for 4.3 billion paths: every listing ends at once saying so; restore,
    export, dry run, grep and diff refuse it in one line and change nothing."""
    evil = Crafted(tmp_path / "evil.git")
    first = evil.commit(evil.tree({"README": ("100644", evil.blob(b"hello\n"))}), "normal")
    tip = evil.commit(evil.bomb(16, 8), "the bomb", parent=first)
    evil.project(h16(1), tip, {"workdir": "/srv/app", "host": "sandbox"})
    b = fetched(tmp_path, evil)
    env = b.env()

    for args in (["list", "--all-projects"], ["list", "-C", "@evil/app"], ["status"],
                 ["list", "--all-projects", "--json"], ["show", "1", "-C", "@evil/app"],
                 ["log", "README", "-C", "@evil/app"]):
        run = bounded(args, env, DEADLINE)
        within(run)
        assert run.code == 0, (args, run.stderr[-2000:])
        if args[-1] == "--json":
            listed = json.loads(run.stdout)[0]["checkpoints"]
            assert listed[0]["over_bounds"] == \
                "4,294,967,296 files (at most 2,000,000 with max_files 0)"
            assert "over_bounds" not in listed[1]  # the normal one below it
        elif args[0] == "list":
            said = [line for line in run.stdout.splitlines() if "over the bounds" in line]
            assert len(said) == 1 and "4,294,967,296 files" in said[0], run.stdout

    out = tmp_path / "out"
    for args, doing in ((["restore", "1", "-C", "@evil/app", "--to", out, "--dry-run"],
                         "restored"),
                        (["restore", "1", "-C", "@evil/app", "--to", out], "restored"),
                        (["grep", "x", "-C", "@evil/app"], "searched"),
                        (["diff", "2", "1", "-C", "@evil/app"], "compared")):
        run = bounded(args, env, DEADLINE)
        within(run)
        one_line(run, f"is not {doing}", "4,294,967,296 files (at most 2,000,000 with max_files 0)")
    assert not out.exists()
    # The normal checkpoint below it is within its bounds: restored as ever.
    run = bounded(["restore", "2", "-C", "@evil/app", "--to", out], env, DEADLINE)
    assert run.code == 0, run.stderr
    assert (out / "README").read_bytes() == b"hello\n"


def test_max_files_and_max_file_size_hold_for_fetched_checkpoints(tmp_path: Path):
    """A local checkpoint's bounds are a fetched one's: past max_files or
    max_file_size_mb (or 100 levels deep), a restore and a grep refuse it."""
    evil = Crafted(tmp_path / "evil.git")
    many = evil.fast_import({f"f{i:02d}.txt": b"x\n" for i in range(30)}, "thirty files")
    evil.project(h16(1), many, {"workdir": "/srv/many", "host": "sandbox"})
    big = evil.fast_import({"big.bin": b"\1" * (3 << 20), "small.txt": b"x\n"}, "3 MiB")
    evil.project(h16(2), big, {"workdir": "/srv/big", "host": "sandbox"})
    deep = evil.fast_import({"/".join(["d"] * 20_000) + "/f": b"deep\n"}, "deep")
    evil.project(h16(3), deep, {"workdir": "/srv/deep", "host": "sandbox"})
    b = fetched(tmp_path, evil)
    out = tmp_path / "out"

    tight = b.env(REWIND_MAX_FILES="10", REWIND_MAX_FILE_SIZE_MB="1")
    for spec, why in (("@evil/many", "30 files (max_files is 10)"),
                      ("@evil/big", "a file of 3 MiB (max_file_size_mb is 1)")):
        for args in (["restore", "1", "-C", spec, "--to", out], ["grep", "x", "-C", spec]):
            run = bounded(args, tight, DEADLINE)
            within(run)
            one_line(run, why)
    run = bounded(["restore", "1", "-C", "@evil/deep", "--to", out], b.env(), DEADLINE)
    within(run)
    one_line(run, "paths more than 100 levels deep")
    assert not out.exists()
    # Within the bounds (the defaults): restored.
    run = bounded(["restore", "1", "-C", "@evil/many", "--to", out], b.env(), DEADLINE)
    assert run.code == 0, run.stderr
    assert len(os.listdir(out)) == 30


@pytest.mark.long
def test_a_2_gib_blob_of_zeros_is_streamed_never_held(tmp_path: Path):
    """2 MB to send, 2 GiB to hold: `cat` streams it (this process and git alike), and
    restore and grep refuse it (over max_file_size_mb) without reading it."""
    evil = Crafted(tmp_path / "evil.git")
    zeros = evil.zeros(2 << 30)
    tip = evil.commit(evil.tree({"zeros.bin": ("100644", zeros),
                                 "notes.txt": ("100644", evil.blob(b"find me\n"))}), "zeros")
    evil.project(h16(1), tip, {"workdir": "/srv/app", "host": "sandbox"})
    b = fetched(tmp_path, evil)
    env = b.env()
    out = tmp_path / "out"

    seen = Zeros()
    run = bounded(["cat", "1", "zeros.bin", "-C", "@evil/app"], env, 900, sink=seen)
    assert run.code == 0, run.stderr
    assert seen.count == 2 << 30 and seen.only_zeros
    assert run.max_rss_mb < 150, f"{run.max_rss_mb:.0f} MB for a streamed cat"
    for args in (["restore", "1", "-C", "@evil/app", "--to", out],
                 ["grep", "find", "-C", "@evil/app"]):
        run = bounded(args, env, DEADLINE)
        within(run)
        one_line(run, "a file of 2,048 MiB (max_file_size_mb is 10)")
    assert not out.exists()


def test_big_files_are_restored_and_searched_in_pieces(tmp_path: Path):
    """With the bounds raised (max_file_size_mb 0: no cap), a 100 MiB file is written out,
    searched and printed in pieces: neither rewind nor the git it reads through holds it
    whole."""
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.commit(evil.tree({"zeros.bin": ("100644", evil.zeros(100 << 20)),
                                 "notes.txt": ("100644", evil.blob(b"find me\n"))}), "zeros")
    evil.project(h16(1), tip, {"workdir": "/srv/app", "host": "sandbox"})
    b = fetched(tmp_path, evil)
    env = b.env(REWIND_MAX_FILE_SIZE_MB="0")
    out = tmp_path / "out"
    run = bounded(["restore", "1", "-C", "@evil/app", "--to", out], env, DEADLINE)
    assert run.code == 0, run.stderr
    assert os.path.getsize(out / "zeros.bin") == 100 << 20
    with open(out / "zeros.bin", "rb") as fh:
        assert not any(chunk.strip(b"\0") for chunk in iter(lambda: fh.read(1 << 20), b""))
    grep = bounded(["grep", "find", "-C", "@evil/app"], env, DEADLINE)
    assert grep.code == 0 and "notes.txt:1:find me" in grep.stdout, grep.stderr
    seen = Zeros()
    cat = bounded(["cat", "1", "zeros.bin", "-C", "@evil/app"], env, DEADLINE, sink=seen)
    assert cat.code == 0 and seen.count == 100 << 20 and seen.only_zeros
    for done in (run, grep, cat):
        assert done.max_rss_mb < 100, f"{done.max_rss_mb:.0f} MB for a 100 MiB file"


class Zeros:
    """A sink counting bytes, and whether all of them were zeros."""

    def __init__(self):
        self.count = 0
        self.only_zeros = True

    def __call__(self, chunk: bytes) -> None:
        self.count += len(chunk)
        self.only_zeros = self.only_zeros and not chunk.strip(b"\0")
