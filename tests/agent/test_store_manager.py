"""The Hermes-compatible Python API: rewindfs.agent.manager.CheckpointManager."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rewindfs.agent.manager import CheckpointManager

HERMES_LIST_KEYS = {"hash", "short_hash", "timestamp", "reason", "files_changed", "insertions",
                    "deletions"}


def test_once_per_turn(mgr, project):
    assert mgr.ensure_checkpoint(str(project), "before write_file") is True
    (project / "a.txt").write_text("a\n")
    # same turn: deduplicated even though something changed
    assert mgr.ensure_checkpoint(str(project), "again") is False
    # the same directory spelled differently is the same directory
    assert mgr.ensure_checkpoint(str(project / "src" / ".."), "again") is False
    mgr.new_turn()
    assert mgr.ensure_checkpoint(str(project), "next turn") is True
    mgr.new_turn()
    # a new turn with no change: nothing written
    assert mgr.ensure_checkpoint(str(project), "no change") is False
    reasons = [c["reason"] for c in mgr.list_checkpoints(str(project))]
    assert reasons == ["next turn", "before write_file"]


def test_disabled_does_nothing(home, project):
    off = CheckpointManager(enabled=False, base=home / "checkpoints")
    assert off.ensure_checkpoint(str(project)) is False
    assert not (home / "checkpoints" / "store").exists()


def test_never_raises(mgr, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.CRITICAL)
    assert mgr.ensure_checkpoint(str(tmp_path / "missing")) is False
    assert mgr.ensure_checkpoint("/") is False
    fake_home = tmp_path / "fake-home"
    fake_home.mkdir()
    (fake_home / "x.txt").write_text("x\n")
    monkeypatch.setenv("HOME", str(fake_home))
    assert mgr.ensure_checkpoint(str(fake_home)) is False
    a_file = tmp_path / "file.txt"
    a_file.write_text("not a dir\n")
    assert mgr.ensure_checkpoint(str(a_file)) is False
    assert mgr.ensure_checkpoint("\x00bad") is False


def test_never_raises_on_too_many_files(home, tmp_path):
    small = CheckpointManager(enabled=True, base=home / "checkpoints", max_files=5)
    proj = tmp_path / "many"
    proj.mkdir()
    for i in range(10):
        (proj / f"{i}.txt").write_text("x\n")
    assert small.ensure_checkpoint(str(proj)) is False


def test_never_raises_on_broken_store(mgr, project, home):
    assert mgr.ensure_checkpoint(str(project)) is True
    store = home / "checkpoints" / "store"
    (store / "HEAD").write_text("garbage\n")
    (store / "objects").rename(store / "objects.gone")
    mgr.new_turn()
    (project / "x.txt").write_text("x\n")
    fresh = CheckpointManager(enabled=True, base=home / "checkpoints")
    assert fresh.ensure_checkpoint(str(project)) is False
    assert mgr.ensure_checkpoint(str(project)) is False
    assert fresh.list_checkpoints(str(project)) == []


def test_list_checkpoints_dicts(mgr, project):
    mgr.ensure_checkpoint(str(project), "first")
    mgr.new_turn()
    core = project / "src" / "pkg" / "core.py"
    core.write_text(core.read_text() + "\n\ndef mul(a, b):\n    return a * b\n")
    (project / "docs" / "guide.txt").write_text("line 1\n")
    mgr.ensure_checkpoint(str(project), "second")
    cps = mgr.list_checkpoints(str(project))
    assert len(cps) == 2
    for cp in cps:
        assert HERMES_LIST_KEYS <= set(cp)
        assert len(cp["hash"]) == 40 and cp["hash"].startswith(cp["short_hash"])
    newest = cps[0]
    assert newest["reason"] == "second"
    assert (newest["files_changed"], newest["insertions"], newest["deletions"]) == (2, 4, 2)
    assert cps[1]["files_changed"] == 4  # first checkpoint against the empty tree


def test_list_checkpoints_unknown_dir(mgr, tmp_path):
    assert mgr.list_checkpoints(str(tmp_path / "never")) == []


def test_diff_result(mgr, project):
    mgr.ensure_checkpoint(str(project), "first")
    (project / "README.md").write_text("# sample\n\nChanged.\n")
    cp = mgr.list_checkpoints(str(project))[0]
    result = mgr.diff(str(project), cp["hash"])
    assert result["success"] is True
    assert {"success", "stat", "diff"} <= set(result)
    assert "README.md" in result["stat"]
    assert "+Changed." in result["diff"] and "-A sample project." in result["diff"]
    short = mgr.diff(str(project), cp["short_hash"])
    assert short["diff"] == result["diff"]
    bad = mgr.diff(str(project), "--patch")
    assert bad["success"] is False and bad["error"]
    missing = mgr.diff(str(project), "deadbeef")
    assert missing["success"] is False


def test_diff_without_store(mgr, project):
    result = mgr.diff(str(project), "abcd")
    assert result["success"] is False


def test_checkpoint_with_label(mgr, project):
    out = mgr.checkpoint(str(project), "labelled", label="v1")
    assert out["success"] is True and out["taken"] is True and out["label"] == "v1"
    (project / "n.txt").write_text("n\n")
    dup = mgr.checkpoint(str(project), "again", label="v1")
    assert dup["success"] is False and "v1" in dup["error"]


# -- get_working_dir_for_path -------------------------------------------------------


@pytest.fixture
def fake_home(tmp_path, monkeypatch):
    home_dir = tmp_path / "u"
    home_dir.mkdir()
    monkeypatch.setenv("HOME", str(home_dir))
    return home_dir


def test_working_dir_marker_root(mgr, fake_home):
    proj = fake_home / "code" / "app"
    (proj / "src" / "pkg").mkdir(parents=True)
    (proj / "pyproject.toml").write_text("")
    target = proj / "src" / "pkg" / "mod.py"
    assert mgr.get_working_dir_for_path(str(target)) == str(proj)
    assert mgr.get_working_dir_for_path(str(proj / "src")) == str(proj)
    for marker in [".git", "package.json", "Cargo.toml", "go.mod", "Makefile"]:
        other = fake_home / f"p-{marker.strip('.')}"
        (other / "deep" / "er").mkdir(parents=True)
        if marker == ".git":
            (other / marker).mkdir()
        else:
            (other / marker).write_text("")
        assert mgr.get_working_dir_for_path(str(other / "deep" / "er" / "f.txt")) == str(other)


def test_working_dir_prefers_registered_root(mgr, fake_home):
    mono = fake_home / "mono"
    app = mono / "packages" / "app"
    (app / "src").mkdir(parents=True)
    (app / "package.json").write_text("{}")
    (mono / "README.md").write_text("mono\n")
    assert mgr.get_working_dir_for_path(str(app / "src" / "index.js")) == str(app)
    assert mgr.ensure_checkpoint(str(mono), "register the monorepo root") is True
    assert mgr.get_working_dir_for_path(str(app / "src" / "index.js")) == str(mono)


def test_working_dir_never_home_or_above(mgr, fake_home):
    # a dotfiles repository at $HOME must not turn $HOME into the project
    (fake_home / ".git").mkdir()
    (fake_home / "Makefile").write_text("")
    loose = fake_home / "notes" / "2024"
    loose.mkdir(parents=True)
    result = mgr.get_working_dir_for_path(str(loose / "todo.txt"))
    assert result == str(loose)
    assert Path(result) != fake_home and Path(result) not in fake_home.parents


def test_working_dir_for_file_directly_in_home_or_above(mgr, fake_home):
    """The search never climbs to $HOME or above (even with a marker there); a path
    that is itself in $HOME or above resolves to its own directory, which checkpointing
    then refuses: nothing that broad is ever captured."""
    (fake_home / ".git").mkdir()
    deep = fake_home / "notes" / "daily"
    deep.mkdir(parents=True)
    assert mgr.get_working_dir_for_path(str(deep / "today.txt")) == str(deep)
    for target in [fake_home / "notes.txt", fake_home, fake_home.parent / "sibling.txt",
                   Path("/")]:
        result = mgr.get_working_dir_for_path(str(target))
        assert Path(result) in (fake_home, *fake_home.parents), f"{target} -> {result}"
        assert mgr.ensure_checkpoint(result, "too broad") is False
    assert not (mgr.layout.store / "refs" / "hermes").exists() or not any(
        (mgr.layout.store / "refs" / "hermes").iterdir())


def test_working_dir_outside_home_without_markers(mgr, fake_home, tmp_path):
    elsewhere = tmp_path / "scratch" / "a" / "b"
    elsewhere.mkdir(parents=True)
    assert mgr.get_working_dir_for_path(str(elsewhere / "f.txt")) == str(elsewhere)


def test_diff_honours_extra_excludes(home, project):
    """diff captures the working tree with the same excludes as checkpoints: a file only
    `extra_excludes` leaves out is no difference, and the next checkpoint still leaves it out."""
    mgr = CheckpointManager(enabled=True, base=home / "checkpoints", extra_excludes=("*.tmp",))
    (project / "scratch.tmp").write_text("scratch\n")
    assert mgr.ensure_checkpoint(str(project), "first")
    result = mgr.diff(str(project), "1")
    assert result["success"], result
    assert result["files"] == [] and result["diff"] == ""
    (project / "README.md").write_text("changed\n")
    mgr.new_turn()
    assert mgr.ensure_checkpoint(str(project), "second")
    assert mgr.diff(str(project), "1")["files"] == []
    assert mgr.diff(str(project), "2")["files"] == ["README.md"]
