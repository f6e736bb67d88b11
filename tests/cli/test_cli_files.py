"""One file through time (issue 15): `rewind log PATH`, `rewind show REF:PATH`,
`rewind cat REF PATH`, `rewind diff REF [REF] -- PATH...`, `rewind grep`; `--stat`
exactly as git prints it; file names quoted as git quotes them."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from rewindfs.errors import InvalidInput
from rewindfs.store import take
from rewindfs.store.history.files.quoting import quote_path, unquote_path


@pytest.fixture
def story(store, project):
    """app.py through four checkpoints: added, edited, untouched, deleted; ids oldest first."""
    ids = []
    (project / "app.py").write_text("one\ntwo\n")
    ids.append(take(store, project, "add app").commit)
    (project / "app.py").write_text("one\n2\nthree\n")
    ids.append(take(store, project, "edit app").commit)
    (project / "README.md").write_text("readme changed\n")
    ids.append(take(store, project, "readme only").commit)
    (project / "app.py").unlink()
    ids.append(take(store, project, "remove app").commit)
    return ids


def test_log_lists_checkpoints_where_the_path_changed(run_rewind, project, story):
    data = json.loads(run_rewind("log", "app.py", "-C", project, "--json", check=True).stdout)
    assert [c["hash"] for c in data] == [story[3], story[1], story[0]]
    assert [c["status"] for c in data] == ["deleted", "modified", "added"]
    assert [(c["insertions"], c["deletions"]) for c in data] == [(0, 3), (2, 1), (2, 0)]
    text = run_rewind("log", "app.py", "-C", project, check=True).stdout.splitlines()
    assert text[0].startswith("app.py in ")
    assert re.match(rf"^\s+1\.\s+{story[3][:8]}\s.*deleted\s+\+0 -3\s+remove app$", text[1])
    assert re.match(rf"^\s+3\.\s+{story[1][:8]}\s.*modified\s+\+2 -1\s+edit app$", text[2])
    # a directory: anything below it
    src = json.loads(run_rewind("log", "src", "-C", project, "--json", check=True).stdout)
    assert [c["hash"] for c in src] == [story[0]]  # src/ arrived with the first checkpoint
    missing = run_rewind("log", "nope.txt", "-C", project)
    assert missing.returncode == 1 and "nope.txt" in missing.stderr


def test_show_ref_path_and_cat_print_the_file_as_it_was(run_rewind, project, story):
    assert run_rewind("show", "3:app.py", "-C", project, check=True).stdout == "one\n2\nthree\n"
    assert run_rewind("show", "4:app.py", "-C", project, check=True).stdout == "one\ntwo\n"
    assert run_rewind("cat", "4", "app.py", "-C", project, check=True).stdout == "one\ntwo\n"
    assert run_rewind("show", f"{story[1][:8]}:app.py", "-C", project,
                      check=True).stdout == "one\n2\nthree\n"
    # relative to the cwd with cat (like restore), to the project root with REF:PATH
    assert run_rewind("cat", "1", "core.py", cwd=project / "src" / "pkg",
                      check=True).stdout.startswith("def add")
    assert run_rewind("show", "1:src/pkg/core.py", cwd=project / "src",
                      check=True).stdout.startswith("def add")
    assert run_rewind("show", "1:./pkg/core.py", cwd=project / "src",
                      check=True).stdout.startswith("def add")
    # metadata is still what `rewind show REF` prints
    assert run_rewind("show", "2", "-C", project, check=True).stdout.startswith("checkpoint 2 ")
    gone = run_rewind("show", "1:app.py", "-C", project)
    assert gone.returncode == 1 and "not in checkpoint" in gone.stderr
    folder = run_rewind("cat", "1", "src", "-C", project)
    assert folder.returncode == 1 and "is a directory" in folder.stderr


def test_show_file_is_byte_exact(project, store, child_env):
    from conftest import REWIND

    data = bytes(range(256)) * 4
    (project / "blob.bin").write_bytes(data)
    take(store, project, "binary")
    env = child_env()
    for argv in (["show", "1:blob.bin"], ["cat", "1", "blob.bin"]):
        out = subprocess.run([REWIND, *argv], cwd=project, capture_output=True, env=env,
                             check=True).stdout
        assert out == data


def test_diff_limited_to_paths(run_rewind, project, story):
    out = run_rewind("diff", "4", "2", "-C", project, "--name-only", check=True).stdout
    assert sorted(out.split()) == ["README.md", "app.py"]
    only = run_rewind("diff", "4", "2", "-C", project, "--", "app.py", check=True).stdout
    assert "app.py" in only and "README.md" not in only
    assert "1 file changed" in only
    (project / "README.md").write_text("now\n")
    (project / "docs" / "guide.txt").write_text("new guide\n")
    docs = run_rewind("diff", "1", "-C", project, "--name-only", "--", "docs",
                      check=True).stdout
    assert docs.split() == ["docs/guide.txt"]


def test_grep_searches_checkpoints_without_a_mount(run_rewind, project, story):
    out = run_rewind("grep", "three", "-C", project, check=True).stdout.splitlines()
    # the version holding "three" is newest in checkpoint 2 (app.py unchanged there)
    assert out == ["2:app.py:3:three"]
    out = run_rewind("grep", "^one$", "-C", project, check=True).stdout.splitlines()
    assert out == ["2:app.py:1:one", "4:app.py:1:one"]  # two versions of app.py
    out = run_rewind("grep", "ONE", "4", "-i", "-C", project, check=True).stdout.splitlines()
    assert out == ["4:app.py:1:one"]
    names = run_rewind("grep", "-l", "def", "-C", project, "--", "src", check=True).stdout
    assert names.splitlines() == ["1:src/pkg/core.py"]
    fixed = run_rewind("grep", "-F", "a + b", "-C", project, check=True).stdout
    assert "src/pkg/core.py:2:    return a + b" in fixed
    nothing = run_rewind("grep", "no such text", "-C", project)
    assert nothing.returncode == 1 and nothing.stdout == "" and nothing.stderr == ""
    bad = run_rewind("grep", "(", "-C", project)
    assert bad.returncode == 1 and bad.stderr.startswith("rewind: invalid pattern")


# -- --stat exactly as git ------------------------------------------------------------------


def stat_cases(project):
    """Trees for the stat comparison: deleted files, additions, a big change that makes git
    scale the graph, a long path git shortens, a rename, a binary change."""
    (project / "gone.txt").write_text("".join(f"{i}\n" for i in range(30)))
    (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(10)))
    (project / "bin.dat").write_bytes(b"\0" * 100)
    (project / "move_me.txt").write_text("".join(f"stable line {i}\n" for i in range(20)))
    yield "before"
    (project / "gone.txt").unlink()
    (project / "big.txt").write_text("".join(f"LINE {i}\n" for i in range(400)))
    deep = project / "a" / "very" / "deeply" / "nested" / "directory" / "structure" / "here"
    deep.mkdir(parents=True)
    (deep / "with_a_rather_long_file_name_indeed.txt").write_text("x\ny\n")
    (project / "bin.dat").write_bytes(b"\0" * 250)
    (project / "moved.txt").write_text((project / "move_me.txt").read_text() + "extra\n")
    (project / "move_me.txt").unlink()
    (project / "README.md").write_text("")
    yield "after"


@pytest.mark.parametrize("columns", ["80", "120", "50"])
def test_diff_stat_matches_git(run_rewind, project, store, store_git, columns):
    ids = [take(store, project, label).commit for label in stat_cases(project)]
    ours = run_rewind("diff", ids[0][:8], ids[1][:8], "-C", project, "--stat",
                      env={"COLUMNS": columns}, check=True).stdout
    theirs = subprocess.run(
        ["git", "-c", "core.quotepath=false", "-c", "diff.renames=true", "diff", "--stat",
         ids[0], ids[1]], env={**_git_env(store_git), "COLUMNS": columns},
        capture_output=True, text=True, check=True).stdout
    assert ours == theirs
    deleted = next(line for line in ours.splitlines() if "gone.txt" in line)
    assert deleted.rstrip().endswith("-") and "+" not in deleted


def _git_env(store_git):
    proc = store_git("rev-parse", "--absolute-git-dir")
    from conftest import isolated_git_env

    return isolated_git_env(GIT_DIR=proc.stdout.strip())


# -- names quoted as git quotes them ----------------------------------------------------------


def test_quote_path_rules():
    assert quote_path(b"plain/name.txt") == "plain/name.txt"
    assert quote_path("caf\u00e9.txt".encode()) == "caf\u00e9.txt"  # printable UTF-8
    assert quote_path(b"caf\xe9.txt") == '"caf\\351.txt"'  # Latin-1: not UTF-8
    assert quote_path(b"tab\there") == '"tab\\there"'
    assert quote_path(b"new\nline") == '"new\\nline"'
    assert quote_path(b'say "hi"') == '"say \\"hi\\""'
    assert quote_path(b"back\\slash") == '"back\\\\slash"'
    assert quote_path(b"esc\x1b[31m") == '"esc\\033[31m"'
    assert quote_path(os.fsdecode(b"caf\xe9")) == '"caf\\351"'  # surrogate-escaped str


def test_unquote_path_reads_back_what_quote_path_writes():
    """The MCP tools take a name as they show it (issue 41): every byte round trips."""
    names = [b"plain/name.txt", "caf\u00e9.txt".encode(), b"caf\xe9.txt", b"tab\there",
             b'say "hi"', b"back\\slash", b"esc\x1b[31m", bytes(range(1, 256)), b'"q"']
    for name in names:
        assert unquote_path(quote_path(name)) == name, name
    assert unquote_path("notes.txt") == b"notes.txt"  # not in quotes: the name itself
    for bad in ('"caf\\351.txt', '"caf\\9.txt"', '"a\\400"', '"open\\"', '"a"b"', '"'):
        with pytest.raises(InvalidInput, match="not a whole quoted name"):
            unquote_path(bad)


def test_odd_file_names_quoted_in_output(run_rewind, project, store):
    take(store, project, "before")
    odd = [b"caf\xe9.txt", b"line\nbreak.txt", b"esc\x1b[2J.txt"]
    for name in odd:
        (project / os.fsdecode(name)).write_bytes(b"x\n")
    take(store, project, "odd names")
    names = run_rewind("diff", "2", "1", "-C", project, "--name-only", check=True).stdout
    assert sorted(names.splitlines()) == sorted(quote_path(n) for n in odd)
    stat = run_rewind("diff", "2", "1", "-C", project, "--stat", check=True).stdout
    assert '"caf\\351.txt"' in stat and '"line\\nbreak.txt"' in stat
    assert "\x1b" not in stat
    (project / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"changed\n")
    restored = run_rewind("restore", "1", "-C", project, "--dry-run", check=True).stdout
    assert '"caf\\351.txt"' in restored


@pytest.mark.parametrize("pattern", ["^second", "line$", r"\Asecond", "second line"])
def test_grep_finds_a_line_whatever_anchors_the_pattern_holds(pattern, project, store,
                                                             run_rewind):
    """A file is searched as a whole first only where that cannot hide a line's match:
    anchored patterns still find a match in a later line, even after a lone CR."""
    (project / "notes.txt").write_bytes(b"first line\rsecond line\nthird\n")
    take(store, project, "notes")
    done = run_rewind("grep", "--json", pattern, "1", cwd=project, check=True)
    found = [(m["path"], m["line"]) for m in json.loads(done.stdout)]
    assert ("notes.txt", "second line") in found, found
