"""`rewind mcp` at its edges (issue 41), against the real server process: sizes cut on any
long line, an answer to every request (a JSON-RPC error for what cannot be read), files
whose names are not UTF-8 read and restored one by one by the quoted names the tools
show, and the small ones (an empty `paths`, the list's limit, a read inside .git)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcpclient import Server

from rewindfs.mcpserver import sizing
from rewindfs.store import Layout, Store, checkpoints, project_hash, take

pytestmark = pytest.mark.long  # each test starts the server (the SDK's import: ~1 s)

LATIN = b"caf\xe9.txt"  # a Latin-1 name: not UTF-8
ESCAPED = b"ctl\x1bname.txt"  # UTF-8, but with a control character
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


@pytest.fixture
def store(home: Path) -> Store:
    return Store(Layout(home / "checkpoints"))


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    return project


def ids(store: Store, project: Path) -> list[str]:
    return [cp.id for cp in checkpoints(store.repo, project_hash(project))]


# -- 5. sizes: any long line is cut ---------------------------------------------------------

def test_a_one_line_file_and_its_diff_are_cut(proj, store, child_env) -> None:
    take(store, proj, "before the bundle")
    line = "var a=1;" * 250_000  # a 2 MB minified bundle: one line, no newline at all
    (proj / "min.js").write_text(line)
    with Server(child_env(), proj) as srv:
        diff = srv.call("diff", ref="1")
        assert "min.js" in diff and "+var a=1;var a=1;" in diff, diff[:2000]
        assert len(diff) < sizing.PATCH_CHARS + 2000, len(diff)
        assert "not shown" in diff.splitlines()[-1], diff[-500:]
    take(store, proj, "with the bundle")
    with Server(child_env(), proj) as srv:
        text = srv.call("read_file", ref="1", path="min.js")
        assert text.startswith("min.js in checkpoint 1 (") and "var a=1;" in text
        assert len(text) < sizing.FILE_CHARS + 2000, len(text)
        shown, last = text.splitlines()[1:]
        assert "the rest of this line" in last and "not shown" in last, last
        assert line.startswith(shown) and len(shown) <= sizing.FILE_CHARS


def test_long_reasons_and_names_are_bounded(proj, store, child_env) -> None:
    """Everything from the store in an answer is bounded, not only patches and files: a
    reason Hermes (or `rewind checkpoint -m`) wrote of any length, many long names."""
    for i in range(30):
        (proj / f"{'n' * 200}{i:03}.txt").write_text("x\n")
    take(store, proj, "why " * 50_000)
    with Server(child_env(), proj) as srv:
        listing = srv.call("list_checkpoints")
        shown = srv.call("show_checkpoint", ref="1")
        for text in (listing, shown):
            assert "why why" in text and len(text) < 12_000, len(text)


# -- 5. every request answered ----------------------------------------------------------------

def test_every_request_gets_an_answer(proj, store, child_env) -> None:
    take(store, proj, "one")
    with Server(child_env(), proj) as srv:
        # Not JSON: a parse error, its id unknown (null), as JSON-RPC says.
        for raw in (b"not json", b'{"jsonrpc": "2.0", "id": 7, "method": ', b"\xff\xfe"):
            srv.send_raw(raw)
            error = srv.answer_to(None)["error"]
            assert error["code"] == PARSE_ERROR and "JSON" in error["message"], (raw, error)
        # JSON, but not a request.
        srv.send_raw(b"[1, 2]")
        assert srv.answer_to(None)["error"]["code"] == INVALID_REQUEST
        srv.send_raw(b'{"jsonrpc": "2.0", "id": "x1", "method": 5}')
        assert srv.answer_to("x1")["error"]["code"] == INVALID_REQUEST
        # A lone surrogate (what Python makes of a byte that is not UTF-8) in any string:
        # an error for that very request, saying how such a name is given instead.
        for name, arguments in (("read_file", {"ref": "1", "path": "\udcff"}),
                                ("read_file", {"ref": "\udcff", "path": "package.json"}),
                                ("rea\udcffd_file", {"ref": "1", "path": "package.json"}),
                                ("diff", {"ref": "1", "path": "caf\udce9.txt"})):
            answer = srv.answer("tools/call", {"name": name, "arguments": arguments})
            error = answer.get("error")
            assert error and error["code"] == INVALID_PARAMS, (name, arguments, answer)
            assert "surrogate" in error["message"] and '"caf\\351.txt"' in error["message"]
        assert "package.json" in srv.call("read_file", ref="1", path="package.json")
    assert srv.stderr.count("Traceback") == 0, srv.stderr


def test_a_project_whose_path_is_not_utf8_is_answered(tmp_path, store, child_env) -> None:
    """Every answer names the project's directory: one whose name Python holds with a lone
    surrogate (a byte that is not UTF-8) still gets its answers, the byte shown as \\xNN,
    and the server still serves after them."""
    project = tmp_path / os.fsdecode(b"caf\xe9")
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    take(store, project, "one")
    with Server(child_env(), project) as srv:
        listing = srv.call("list_checkpoints")
        assert "caf\\xe9" in listing and "one" in listing, listing
        assert "nope.txt" in srv.error("read_file", ref="1", path="nope.txt")
        assert "package.json" in srv.call("show_checkpoint", ref="1")


# -- 5. names that are not UTF-8, one by one -------------------------------------------------

def test_names_that_are_not_utf8_are_read_and_restored_by_their_quoted_names(
        proj, store, child_env) -> None:
    (proj / os.fsdecode(LATIN)).write_bytes(b"latin\n")
    (proj / os.fsdecode(ESCAPED)).write_bytes(b"escaped\n")
    (proj / "plain.txt").write_text("plain\n")
    (proj / os.fsdecode(b"bin\xff.dat")).write_bytes(b"\0\1\2")
    take(store, proj, "names")
    for name in (LATIN, ESCAPED, b"plain.txt"):
        os.unlink(proj / os.fsdecode(name))
    latin, escaped = '"caf\\351.txt"', '"ctl\\033name.txt"'
    with Server(child_env(), proj, "--allow-restore") as srv:
        shown = srv.call("show_checkpoint", ref="1")
        assert latin in shown and escaped in shown, shown  # the names as the tools show them
        assert srv.call("read_file", ref="1", path=latin).endswith("\nlatin\n")
        read = srv.call("read_file", ref="1", path=escaped)
        assert read.startswith(escaped) and read.endswith("\nescaped\n"), read
        # The advice names the file the way restore takes it (a JSON string), and the way
        # a shell takes it for `rewind cat`.
        binary = '"bin\\377.dat"'
        described = srv.call("read_file", ref="1", path=binary)
        assert "binary file, 3 bytes" in described, described
        assert f"paths=[{json.dumps(binary)}]" in described, described
        assert "rewind cat 1 $'bin\\377.dat'" in described, described
        changes = srv.call("diff", ref="1", path=latin)
        assert "-latin" in changes and "escaped" not in changes, changes
        before = ids(store, proj)
        plan = srv.call("restore", ref="1", paths=[latin], dry_run=True)
        assert f"create 1: {latin}" in plan, plan
        done = srv.call("restore", ref="1", paths=[latin])
        assert "1 file(s) written" in done, done
        assert (proj / os.fsdecode(LATIN)).read_bytes() == b"latin\n"
        assert not (proj / os.fsdecode(ESCAPED)).exists() and not (proj / "plain.txt").exists()
        assert len(ids(store, proj)) == len(before) + 1  # its pre-rollback snapshot
        srv.call("restore", ref="1", paths=[escaped])  # (pre-rollback snapshots: unnumbered)
        assert (proj / os.fsdecode(ESCAPED)).read_bytes() == b"escaped\n"
        # A quoted name that does not end its quotes, or escapes nothing it may: one line.
        for bad in ('"caf\\351.txt', '"caf\\9.txt"'):
            said = srv.error("read_file", ref="1", path=bad)
            assert "quoted" in said and "\n" not in said, said


# -- 7. the small ones ---------------------------------------------------------------------------

def test_an_empty_paths_list_is_refused_not_everything(proj, store, child_env) -> None:
    (proj / "a.txt").write_text("a\n")
    take(store, proj, "one")
    (proj / "a.txt").write_text("changed\n")
    (proj / "new.txt").write_text("new\n")
    before = ids(store, proj)
    with Server(child_env(), proj, "--allow-restore") as srv:
        for dry_run in (True, False):
            said = srv.error("restore", ref="1", paths=[], dry_run=dry_run)
            assert "empty" in said and "\n" not in said and "nothing" in said, said
    assert (proj / "a.txt").read_text() == "changed\n" and (proj / "new.txt").exists()
    assert ids(store, proj) == before  # not even a pre-rollback snapshot


def test_the_list_limit_says_what_is_true(proj, store, child_env) -> None:
    for i in range(105):
        (proj / "n.txt").write_text(f"{i}\n")
        take(store, proj, f"step {i}")
    with Server(child_env(), proj) as srv:
        at_most = srv.call("list_checkpoints", limit=100)
        assert "100 of 105" in at_most and "larger limit" not in at_most, at_most[:300]
        assert "at most 100" in at_most
        above = srv.call("list_checkpoints", limit=500)
        assert "100 of 105" in above and "at most 100" in above, above[:300]
        assert "larger limit" in srv.call("list_checkpoints", limit=10)
        for bad in (0, -3):
            said = srv.error("list_checkpoints", limit=bad)
            assert "limit" in said and "at least 1" in said, said


def test_a_read_inside_git_says_it_is_not_in_any_checkpoint(proj, store, child_env) -> None:
    (proj / ".git").mkdir()
    (proj / ".git" / "config").write_text("[core]\n")
    take(store, proj, "one")
    with Server(child_env(), proj) as srv:
        for tool, args in (("read_file", {"ref": "1", "path": ".git/config"}),
                           ("diff", {"ref": "1", "path": ".git/config"})):
            said = srv.error(tool, **args)
            assert "restore" not in said and "never checkpointed" in said, said
