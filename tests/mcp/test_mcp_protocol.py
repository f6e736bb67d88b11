"""`rewind mcp` at the protocol level, against the real server process (tests/mcp/mcpclient):
initialize, tools/list with the six tools named as agents call them, each tool on a real
store, references as the CLI takes them, errors as error results, the read-only refusal
that changes nothing, restore and undo when allowed (pre-rollback snapshot first), and
output sized for a model."""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path

import pytest
from conftest import PAUSE_RESTORE, REWIND
from mcpclient import Server

from rewindfs.store import Layout, Store, checkpoints, project_hash, set_label, take

pytestmark = pytest.mark.long  # each test starts the server (the SDK's import: ~1 s)

TOOLS = {"list_checkpoints", "show_checkpoint", "diff", "read_file", "restore", "undo"}


@pytest.fixture
def history(home: Path, tmp_path: Path) -> tuple[Path, Store]:
    """A project with two checkpoints (the second labelled), then notes.txt deleted."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    (project / "notes.txt").write_text("keep me\n")
    (project / "logo.bin").write_bytes(b"\x89PNG\0\0binary" * 10)
    store = Store(Layout(home / "checkpoints"))
    take(store, project, "first")
    (project / "notes.txt").write_text("keep me\nand me\n")
    second = take(store, project, "before: rm notes.txt")
    set_label(store, second.project, "good", second.commit)
    (project / "notes.txt").unlink()
    return project, store


def listed(run_rewind, project: Path) -> list[dict]:
    return json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)


def test_initialize_and_the_six_tools(history, child_env) -> None:
    project, _ = history
    with Server(child_env(), project) as srv:
        init = srv.initialized
        assert init["serverInfo"]["name"] == "rewind"
        assert "tools" in init["capabilities"] and "restore" in init["instructions"]
        tools = {t["name"]: t for t in srv.tools()}
        assert set(tools) == TOOLS
        for name, tool in tools.items():
            assert tool["description"] and tool["inputSchema"]["type"] == "object", name
            assert "project" in tool["inputSchema"]["properties"], name
            read_only = tool["annotations"]["readOnlyHint"]
            assert read_only == (name not in ("restore", "undo")), name
        assert tools["read_file"]["inputSchema"]["required"] == ["ref", "path"]
        assert set(tools["restore"]["inputSchema"]["properties"]) == {
            "ref", "paths", "dry_run", "project", "git"}
    assert srv.close() is None  # closed by the block: it ended on its own when stdin closed


def test_reading_tools_take_the_clis_references(history, child_env) -> None:
    project, store = history
    ids = [cp.id for cp in checkpoints(store.repo, take(store, project, "probe").project)]
    with Server(child_env(), project) as srv:
        listing = srv.call("list_checkpoints")
        assert "1." in listing and "before: rm notes.txt" in listing and "labels: good" in listing
        assert "2." in listing and "first" in listing
        # The same checkpoint by number, id, label and time.
        for ref in ("2", ids[1], ids[1][:8], "good"):
            shown = srv.call("show_checkpoint", ref=ref)
            assert ids[1] in shown and "notes.txt" in shown, (ref, shown)
        assert ids[0] in srv.call("show_checkpoint", ref="0 minutes ago")
        assert srv.call("read_file", ref="good", path="notes.txt").endswith(
            "keep me\nand me\n")
        assert "keep me\n" in srv.call("read_file", ref="3", path=str(project / "notes.txt"))
        described = srv.call("read_file", ref="3", path="logo.bin")
        assert "binary file, 120 bytes" in described and "PNG" not in described
        # Against the working tree (notes.txt deleted since), one path, or another checkpoint.
        changes = srv.call("diff", ref="good")
        assert "deleted file mode" in changes and "-and me" in changes, changes
        assert "No changes" in srv.call("diff", ref="good", path="package.json")
        between = srv.call("diff", ref="3", ref2="2")
        assert "+and me" in between and "working tree" not in between


def test_errors_are_error_results_that_say_why(history, child_env, tmp_path) -> None:
    project, _ = history
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    with Server(child_env(), project) as srv:
        assert "no checkpoint" in srv.error("show_checkpoint", ref="42").lower()
        assert "escapes the project" in srv.error("read_file", ref="1", path="../secret")
        assert "not in checkpoint" in srv.error("read_file", ref="1", path="nope.txt")
        assert "ref" in srv.error("read_file", path="notes.txt")  # a missing argument
        assert "No checkpoints" in srv.call("list_checkpoints", project=str(elsewhere))
        assert "no checkpoint" in srv.error("diff", ref="1", project=str(elsewhere)).lower()
        assert srv.call("list_checkpoints")  # still serving after the errors


def test_read_only_server_refuses_restore_and_undo_and_changes_nothing(
        history, child_env, run_rewind) -> None:
    project, _ = history
    before = listed(run_rewind, project)
    with Server(child_env(), project) as srv:
        for name, args in (("restore", {"ref": "1"}), ("undo", {}),
                           ("restore", {"ref": "1", "dry_run": True})):
            said = srv.error(name, **args)
            assert "read-only" in said and "--allow-restore" in said and "nothing" in said
    assert not (project / "notes.txt").exists()
    assert listed(run_rewind, project) == before  # no pre-rollback snapshot either


def test_restore_then_undo_when_allowed(history, child_env, run_rewind) -> None:
    project, _ = history
    with Server(child_env(), project, "--allow-restore") as srv:
        plan = srv.call("restore", ref="good", dry_run=True)
        assert "create 1: notes.txt" in plan and "nothing was changed" in plan, plan
        assert not (project / "notes.txt").exists()
        done = srv.call("restore", ref="good", paths=["notes.txt"])
        assert (project / "notes.txt").read_text() == "keep me\nand me\n"
        pre = [cp for cp in listed(run_rewind, project) if cp["pre_rollback"]]
        assert len(pre) == 1 and f"Pre-rollback snapshot {pre[0]['hash'][:8]}" in done, done
        assert "undo" in done
        undone = srv.call("undo")
        assert "Undid the last restore" in undone and not (project / "notes.txt").exists()
        # The undo is a restore too: `rewind undo` takes it back.
    run_rewind("undo", cwd=project, check=True)
    assert (project / "notes.txt").read_text() == "keep me\nand me\n"


def test_restore_offers_the_repository_too(tmp_path, child_env, run_rewind) -> None:
    """restore(ref, git=true) gives .git back as the checkpoint recorded it; without it,
    .git is left alone and the answer says how it differs, naming the choice."""
    from gitrepos import git, rich_repository, state

    project = rich_repository(tmp_path)
    before = state(project)
    run_rewind("checkpoint", cwd=project, check=True)
    git(project, "branch", "-D", "feature")
    with Server(child_env(), project, "--allow-restore") as srv:
        plain = srv.call("restore", ref="1")
        assert "refs differ" in plain and "git=true" in plain, plain
        assert "feature" not in git(project, "branch")
        done = srv.call("restore", ref="1", git=True)
        assert "repository set back" in done, done
        assert state(project) == before
        srv.call("undo")
        assert "feature" not in git(project, "branch")


def test_a_restore_never_reaches_outside_the_project(history, child_env, home,
                                                     tmp_path) -> None:
    project, store = history
    other = tmp_path / "other"
    other.mkdir()
    (other / "package.json").write_text("{}\n")
    foreign = take(store, other, "other's").commit
    with Server(child_env(), project, "--allow-restore") as srv:
        assert "escapes the project" in srv.error("restore", ref="1", paths=["../other"])
        said = srv.error("restore", ref=foreign)
        assert foreign[:8] in said, said
        assert "escapes the project" in srv.error("read_file", ref="1",
                                                  path=str(other / "package.json"))
    assert not (project / "notes.txt").exists()
    assert (other / "package.json").read_text() == "{}\n"


def test_output_is_sized_for_a_model(home, tmp_path, child_env) -> None:
    project = tmp_path / "big"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    store = Store(Layout(home / "checkpoints"))
    for i in range(25):
        (project / "n.txt").write_text(f"{i}\n")
        take(store, project, f"step {i}" + (" \x1b[31mred\x1b[0m" if i == 24 else ""))
    (project / "long.txt").write_text("".join(f"line {i}\n" for i in range(20000)))
    with Server(child_env(), project) as srv:
        listing = srv.call("list_checkpoints")
        rows = [line.split()[0] for line in listing.splitlines()[1:] if line.strip()]
        assert "20 of 25; 5 more" in listing and rows[:21] == [
            *(f"{n}." for n in range(1, 21)), "Name"], listing
        assert "\x1b" not in listing and "\\x1b[31mred" in listing
        three = srv.call("list_checkpoints", limit=3)
        assert "3 of 25; 22 more" in three
        diff = srv.call("diff", ref="1")
        assert "long.txt" in diff and "more line(s)" in diff and len(diff) < 30_000, len(diff)
    take(store, project, "with long.txt")
    with Server(child_env(), project) as srv:
        text = srv.call("read_file", ref="1", path="long.txt")
        assert text.splitlines()[1] == "line 0" and "more line(s)" in text
        assert len(text) < 60_000


def test_a_restore_refuses_while_another_restore_of_the_project_runs(
        home, tmp_path, child_env) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    for name in "abc":
        (project / f"{name}.txt").write_text("checkpointed\n")
    store = Store(Layout(home / "checkpoints"))
    good = take(store, project, "good")
    set_label(store, good.project, "good", good.commit)
    for name in "abc":
        (project / f"{name}.txt").write_text("changed since\n")
    # `rewind restore` stops after its first file, holding the project (restore.pause).
    cli = subprocess.Popen([REWIND, "restore", "1", "--yes"], cwd=project,
                           env=child_env(**{PAUSE_RESTORE: "1"}), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said = b""
        while b"rewind: test pause" not in said:
            assert select.select([cli.stderr], [], [], 120)[0], said
            chunk = os.read(cli.stderr.fileno(), 4096)
            assert chunk, said
            said += chunk
        before = [cp.id for cp in checkpoints(store.repo, project_hash(project))]
        halfway = sorted(p.read_text() for p in project.glob("?.txt"))
        assert halfway == ["changed since\n", "changed since\n", "checkpointed\n"]  # midway
        with Server(child_env(), project, "--allow-restore") as srv:
            refused = srv.error("restore", ref="good")
            assert f"another restore of {project} is running (process {cli.pid})" in refused
            assert "nothing was changed" in refused
            assert "is running" in srv.error("undo")
            assert [cp.id for cp in checkpoints(store.repo, project_hash(project))] == before
            assert sorted(p.read_text() for p in project.glob("?.txt")) == halfway
            cli.kill()  # the restore dies midway: its lock is let go of
            cli.wait(timeout=60)
            done = srv.call("restore", ref="good")
        assert "Restored" in done and "Pre-rollback snapshot" in done, done
        assert {p.read_text() for p in project.glob("?.txt")} == {"checkpointed\n"}
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
