"""The agent API as current upstream Hermes defines it (issue 13), on real stores.

Upstream's CheckpointManager (NousResearch/hermes-agent, tools/checkpoint_manager.py)
is the behavioural spec: record_agent_write(file_path), restore(..., safe=False),
its result keys and error messages, session_diff and list_all_checkpoints. Every
test goes through rewindfs.hermes, the module a harness imports instead of Hermes's.
"""

from __future__ import annotations

import os

import pygit2
import pytest
from test_restore_helpers import (
    immutable,  # noqa: F401 - fixture
    picture,
    write,
)

import rewindfs.hermes as hermes
from rewindfs.store import project_hash

MiB = 1024 * 1024


@pytest.fixture
def base(home, monkeypatch):
    """Hermes's way of pointing a harness at a test store: replace CHECKPOINT_BASE."""
    path = home / "elsewhere" / "checkpoints"
    monkeypatch.setattr(hermes, "CHECKPOINT_BASE", path)
    return path


@pytest.fixture
def work_dir(tmp_path):
    d = tmp_path / "project"
    write(d, {"main.py": "print('hello')\n", "README.md": "# Project\n"})
    return d


@pytest.fixture
def mgr(base, work_dir):
    return hermes.CheckpointManager(enabled=True, max_snapshots=50)


def first_checkpoint(mgr, work_dir) -> str:
    assert mgr.ensure_checkpoint(str(work_dir), "initial") is True
    mgr.new_turn()
    return mgr.list_checkpoints(str(work_dir))[0]["hash"]


def agent_writes(mgr, path, data):
    """What a harness's write tool does: write, then record (upstream's one-argument form)."""
    path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data)
    mgr.record_agent_write(str(path))


# -- where the store is -------------------------------------------------------------------


def test_replaced_checkpoint_base_is_used_at_call_time(base, work_dir, home):
    mgr = hermes.CheckpointManager(enabled=True)
    assert mgr.ensure_checkpoint(str(work_dir), "one") is True
    assert (base / "store" / "HEAD").exists()
    assert not (home / "checkpoints").exists()


def test_hermes_home_is_looked_up_on_each_call(home, tmp_path, work_dir, monkeypatch):
    """Without a replaced CHECKPOINT_BASE the live $HERMES_HOME decides (one process may
    serve several profiles)."""
    mgr = hermes.CheckpointManager(enabled=True)
    assert mgr.ensure_checkpoint(str(work_dir), "profile one") is True
    other = tmp_path / "profile-two"
    monkeypatch.setenv("HERMES_HOME", str(other))
    assert mgr.list_checkpoints(str(work_dir)) == []
    mgr.new_turn()
    assert mgr.ensure_checkpoint(str(work_dir), "profile two") is True
    assert (other / "checkpoints" / "store" / "HEAD").exists()
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert [c["reason"] for c in mgr.list_checkpoints(str(work_dir))] == ["profile one"]


def test_settings_hermes_does_not_pass_come_from_config_yaml(home, base):
    """Hermes's constructor has four settings; the others are the config file's (the one
    Hermes reads), so `auto_prune: false` there is honoured; a bad file means defaults."""
    base.parent.mkdir(parents=True)
    (base.parent / "config.yaml").write_text(
        "checkpoints:\n  auto_prune: false\n  retention_days: 3\n  max_files: 123\n")
    mgr = hermes.CheckpointManager(enabled=True)
    assert mgr.auto_prune is False and mgr.prune_policy.retention_days == 3
    assert mgr.limits.max_files == 123
    assert hermes.CheckpointManager(auto_prune=True).auto_prune is True  # keywords win
    (base.parent / "config.yaml").write_text("checkpoints:\n  retention_days: soon\n")
    mgr = hermes.CheckpointManager(enabled=True)
    assert mgr.auto_prune is True and mgr.prune_policy.retention_days == 7


# -- record_agent_write ---------------------------------------------------------------------


def test_record_agent_write_one_argument_finds_the_project(mgr, work_dir):
    """Upstream's form: only the file; the registered project owns it even below an
    ancestor that carries a project marker."""
    (work_dir.parent / "pyproject.toml").write_text("[project]\n")
    cp = first_checkpoint(mgr, work_dir)
    write(work_dir, {"src/deep/mod.py": "v1\n"})
    agent_writes(mgr, work_dir / "src/deep/mod.py", "agent\n")
    agent_writes(mgr, work_dir / "main.py", "agent\n")
    (work_dir / "main.py").write_text("person\n")
    out = mgr.restore(str(work_dir), cp, safe=True)
    assert out["success"] and out["safe"] is True, out
    assert not (work_dir / "src").exists()  # the agent's file, gone again
    assert (work_dir / "main.py").read_text() == "person\n"
    assert out["skipped_user_edits"] == ["main.py"]


def test_record_agent_write_both_forms_record_the_same(mgr, work_dir, tmp_path, monkeypatch):
    cp = first_checkpoint(mgr, work_dir)
    (work_dir / "main.py").write_text("agent one\n")
    assert mgr.record_agent_write(str(work_dir), "main.py") is True  # rewindfs's form
    (work_dir / "README.md").write_text("agent two\n")
    monkeypatch.chdir(work_dir)  # a relative file path is taken from the cwd, as upstream does
    assert mgr.record_agent_write("README.md") is True
    out = mgr.restore(str(work_dir), cp, safe=True)
    assert out["restored_files"] == ["README.md", "main.py"], out
    assert "skipped_user_edits" in out and out["skipped_user_edits"] == []
    # a path the project does not hold, or the project itself, records nothing
    assert mgr.record_agent_write(str(work_dir)) is False
    assert mgr.record_agent_write(str(work_dir), str(tmp_path / "elsewhere.txt")) is False


def test_disabled_manager_writes_nothing_anywhere(base, home, work_dir, tmp_path):
    before_home, before_project = picture(home), picture(work_dir)
    off = hermes.CheckpointManager(enabled=False)
    off.new_turn()
    assert off.ensure_checkpoint(str(work_dir)) is False
    assert off.record_agent_write(str(work_dir / "main.py")) is False  # must not raise
    assert off.record_agent_write(str(work_dir), "main.py") is False
    assert off.record_agent_write(str(tmp_path / "no" / "such" / "file")) is False
    assert not base.exists()
    assert picture(home) == before_home and picture(work_dir) == before_project


def test_record_agent_write_never_raises(mgr, work_dir, base):
    first_checkpoint(mgr, work_dir)
    for bad in ("", "\0", str(work_dir / "a\0b")):
        assert mgr.record_agent_write(bad) is False
    assert mgr.record_agent_write(str(work_dir), "../outside") is False


# -- restore: upstream's default, safe mode, result keys ------------------------------------


def test_restore_defaults_to_everything_even_with_a_ledger(mgr, work_dir):
    base_cp = first_checkpoint(mgr, work_dir)
    agent_writes(mgr, work_dir / "main.py", "agent version\n")
    (work_dir / "README.md").write_text("user hand edit\n")
    out = mgr.restore(str(work_dir), base_cp)
    assert out["success"] and out["safe"] is False
    assert (work_dir / "main.py").read_text() == "print('hello')\n"
    assert (work_dir / "README.md").read_text() == "# Project\n"
    assert out["restored_files"] == ["README.md", "main.py"]
    for key in ("skipped_user_edits", "skipped_oversize", "kept_not_agent", "failed_deletes"):
        assert key not in out, key


def test_safe_restore_without_any_ledger_falls_back_to_full(mgr, work_dir):
    base_cp = first_checkpoint(mgr, work_dir)
    (work_dir / "main.py").write_text("changed without a ledger\n")
    out = mgr.restore(str(work_dir), base_cp, safe=True)
    assert out["success"] and out["safe"] is False
    assert (work_dir / "main.py").read_text() == "print('hello')\n"
    for key in ("skipped_user_edits", "skipped_oversize", "kept_not_agent", "failed_deletes"):
        assert key not in out, key


def test_safe_restore_with_only_older_ledger_entries_stays_safe(mgr, work_dir):
    """The agent wrote before the checkpoint, a person after it: safe mode must not turn
    into a full restore just because the agent wrote nothing since."""
    agent_writes(mgr, work_dir / "main.py", "agent, earlier\n")
    cp = first_checkpoint(mgr, work_dir)
    (work_dir / "README.md").write_text("person\n")
    out = mgr.restore(str(work_dir), cp, safe=True)
    assert out["success"] and out["safe"] is True
    assert (work_dir / "README.md").read_text() == "person\n"
    assert out["skipped_user_edits"] == ["README.md"] and out["restored_files"] == []


def test_safe_restore_result_keys(mgr, work_dir):
    """restored_files: everything written or removed back; skipped_user_edits: every file
    kept because a person changed it, whether or not the agent ever wrote it."""
    cp = first_checkpoint(mgr, work_dir)
    agent_writes(mgr, work_dir / "main.py", "agent version\n")  # reverted
    agent_writes(mgr, work_dir / "agent.txt", "agent file\n")  # removed
    agent_writes(mgr, work_dir / "README.md", "agent readme\n")
    (work_dir / "README.md").write_text("person fixed the agent's readme\n")  # kept
    write(work_dir, {"notes/person.txt": "a person's new file\n"})  # kept
    out = mgr.restore(str(work_dir), cp, safe=True)
    assert out["success"] is True
    assert out["restored_files"] == ["agent.txt", "main.py"]
    assert out["skipped_user_edits"] == ["README.md", "notes/person.txt"]
    assert out["skipped_oversize"] == []
    assert "failed_deletes" not in out
    assert out["deleted_files"] == ["agent.txt"] and out["kept_not_agent"] == [
        "notes/person.txt"]
    assert not (work_dir / "agent.txt").exists()
    assert (work_dir / "notes/person.txt").exists()


def test_safe_restore_restores_a_file_the_agent_wrote_then_deleted(mgr, work_dir):
    cp = first_checkpoint(mgr, work_dir)
    agent_writes(mgr, work_dir / "main.py", "agent version\n")
    (work_dir / "main.py").unlink()  # no ledger record of the delete
    out = mgr.restore(str(work_dir), cp, safe=True)
    assert out["success"] is True
    assert (work_dir / "main.py").read_text() == "print('hello')\n"
    assert out["restored_files"] == ["main.py"] and out["skipped_user_edits"] == []


def test_failed_delete_is_reported_not_restored(mgr, work_dir, immutable):  # noqa: F811
    cp = first_checkpoint(mgr, work_dir)
    write(work_dir, {"locked/stubborn.txt": "agent scratch\n"})
    mgr.record_agent_write(str(work_dir / "locked/stubborn.txt"))
    agent_writes(mgr, work_dir / "main.py", "agent version\n")
    immutable(work_dir / "locked")
    out = mgr.restore(str(work_dir), cp, safe=True)
    assert out["success"] is True, out  # every file of the checkpoint is back
    assert (work_dir / "locked/stubborn.txt").exists()
    assert out["failed_deletes"] == ["locked/stubborn.txt"]
    assert out["restored_files"] == ["main.py"]
    assert (work_dir / "main.py").read_text() == "print('hello')\n"


def test_failed_delete_in_a_full_restore_too(mgr, work_dir, immutable):  # noqa: F811
    cp = first_checkpoint(mgr, work_dir)
    write(work_dir, {"locked/new.txt": "made later\n"})
    immutable(work_dir / "locked")
    out = mgr.restore(str(work_dir), cp)
    assert out["success"] is True and out["failed_deletes"] == ["locked/new.txt"]
    assert out["restored_files"] == [] and "skipped_user_edits" not in out


# -- files over the size cap ----------------------------------------------------------------


@pytest.fixture
def capped(base, work_dir):
    return hermes.CheckpointManager(enabled=True, max_snapshots=50, max_file_size_mb=1)


def test_oversize_file_no_checkpoint_holds_is_kept(capped, work_dir):
    corpus = work_dir / "corpus.jsonl"
    corpus.write_bytes(b"original\n" + b"x" * (2 * MiB))
    cp = first_checkpoint(capped, work_dir)
    agent_writes(capped, corpus, b"agent appended\n" + b"y" * (2 * MiB))
    agent_writes(capped, work_dir / "main.py", "agent version\n")
    out = capped.restore(str(work_dir), cp, safe=True)
    assert out["success"] is True
    assert corpus.read_bytes().startswith(b"agent appended")
    assert out["skipped_oversize"] == ["corpus.jsonl"]
    assert out["restored_files"] == ["main.py"]


def test_the_cap_boundary_is_one_rule_both_ways(capped, work_dir):
    at_cap, over_cap = work_dir / "at_cap.bin", work_dir / "over_cap.bin"
    at_cap.write_bytes(b"o" * MiB)
    over_cap.write_bytes(b"o" * (MiB + 1))
    cp = first_checkpoint(capped, work_dir)
    agent_writes(capped, at_cap, b"a" * MiB)
    agent_writes(capped, over_cap, b"a" * (MiB + 1))
    out = capped.restore(str(work_dir), cp, safe=True)
    assert at_cap.read_bytes() == b"o" * MiB  # stored, so reverted
    assert over_cap.read_bytes() == b"a" * (MiB + 1)  # never stored, so left alone
    assert out["restored_files"] == ["at_cap.bin"]
    assert out["skipped_oversize"] == ["over_cap.bin"]


@pytest.mark.parametrize("safe", [True, False])
def test_file_grown_past_the_cap_is_reverted_and_undoable(capped, work_dir, safe, base,
                                                          run_rewind):
    grew = work_dir / "grew.txt"
    grew.write_text("precious original\n")
    cp = first_checkpoint(capped, work_dir)
    bloated = b"agent bloated it\n" + b"b" * (2 * MiB)
    agent_writes(capped, grew, bloated)
    out = capped.restore(str(work_dir), cp, safe=safe)
    assert out["success"] is True
    assert grew.read_text() == "precious original\n"
    assert out["restored_files"] == ["grew.txt"] and out["untouched"] == []
    assert "grew.txt" not in out.get("skipped_oversize", [])
    # better than upstream: the pre-rollback snapshot holds the bloated version ...
    repo = pygit2.Repository(str(base / "store"))
    tree = repo[out["pre_rollback"]].peel(pygit2.Commit).tree
    assert repo[tree["grew.txt"].id].data == bloated
    # ... so `rewind undo` brings it back
    proc = run_rewind("undo", "-C", work_dir, env={"HERMES_HOME": str(base.parent),
                                                    "REWIND_MAX_FILE_SIZE_MB": "1"})
    assert proc.returncode == 0, proc.stderr
    assert grew.read_bytes() == bloated


# -- session_diff and list_all_checkpoints ---------------------------------------------------


def test_session_diff_empty_without_checkpoints_and_without_changes(mgr, work_dir):
    out = mgr.session_diff(str(work_dir))
    assert out == {"success": True, "stat": "", "diff": "", "empty": True}
    cp = first_checkpoint(mgr, work_dir)
    out = mgr.session_diff(str(work_dir))
    assert out["success"] is True and out["empty"] is True and out["diff"] == ""
    assert out["baseline"] == cp


def test_session_diff_goes_back_to_the_oldest_checkpoint(mgr, work_dir):
    oldest = first_checkpoint(mgr, work_dir)
    (work_dir / "main.py").write_text("print('v2')\n")
    assert mgr.ensure_checkpoint(str(work_dir), "second") is True
    (work_dir / "feature.py").write_text("x = 1\n")
    out = mgr.session_diff(str(work_dir))
    assert out["success"] is True and "empty" not in out
    assert out["baseline"] == oldest
    assert "feature.py" in out["diff"] and "+x = 1" in out["diff"]
    assert "-print('hello')" in out["diff"] and "+print('v2')" in out["diff"]
    assert "feature.py" in out["stat"]


def test_list_all_checkpoints(mgr, tmp_path, work_dir):
    other = tmp_path / "other"
    write(other, {"g.py": "b\n"})
    assert mgr.list_all_checkpoints() == []
    assert mgr.ensure_checkpoint(str(work_dir), "A-1") is True
    mgr.new_turn()
    assert mgr.ensure_checkpoint(str(other), "B-1") is True
    mgr.new_turn()
    (work_dir / "main.py").write_text("v2\n")
    assert mgr.ensure_checkpoint(str(work_dir), "A-2") is True
    every = mgr.list_all_checkpoints()
    assert [(c["reason"], c["workdir"]) for c in every] == [
        ("A-2", str(work_dir)), ("B-1", str(other)), ("A-1", str(work_dir))]
    for entry in every:
        assert {"hash", "short_hash", "timestamp", "files_changed", "insertions",
                "deletions"} <= entry.keys()
    text = hermes.format_checkpoint_list(every, "all directories")
    assert "[other]" in text and "[project]" in text and "A-2" in text


# -- error messages a harness may match on ---------------------------------------------------


def test_invalid_hash_messages(mgr, work_dir):
    first_checkpoint(mgr, work_dir)
    before = picture(work_dir)
    for call in (mgr.restore, mgr.diff):
        out = call(str(work_dir), "--patch")
        assert out["success"] is False
        assert "Invalid commit hash" in out["error"] and "must not start with '-'" in out["error"]
        out = call(str(work_dir), "abc; rm -rf /")
        assert out["success"] is False
        assert "Invalid commit hash" in out["error"]
        assert "expected 4-64 hex characters" in out["error"]
        assert call(str(work_dir), " ")["error"] == "Empty commit hash"
        out = call(str(work_dir), "deadbeef1234")
        assert out == {"success": False, "error": "Checkpoint 'deadbeef1234' not found",
                       "detail": out["detail"]}
    assert picture(work_dir) == before


def test_no_store_message(mgr, work_dir, base):
    for call in (mgr.restore, mgr.diff):
        assert call(str(work_dir), "abc123") == {
            "success": False, "error": "No checkpoints exist for this directory"}
    assert not base.exists()


def test_file_path_messages(mgr, work_dir, tmp_path):
    (tmp_path / "outside").mkdir()
    (work_dir / "escape").symlink_to(tmp_path / "outside")
    cp = first_checkpoint(mgr, work_dir)
    before = picture(work_dir)
    out = mgr.restore(str(work_dir), cp, file_path=str(work_dir.parent / "outside_file.txt"))
    assert out["success"] is False and "got absolute path" in out["error"]
    for path in ("../outside_file.txt", "src/../../x", "escape/x.txt"):
        out = mgr.restore(str(work_dir), cp, file_path=path)
        assert out["success"] is False
        assert out["error"] == f"File path escapes the working directory via traversal: {path!r}"
    assert picture(work_dir) == before
    (work_dir / "main.py").write_text("changed\n")
    assert mgr.restore(str(work_dir), cp, file_path="main.py")["success"] is True
    (work_dir / "escape").unlink()
    (work_dir / "escape").symlink_to("main.py")
    out = mgr.restore(str(work_dir), cp, file_path="escape")  # the link itself is fine
    assert out["success"] is True and os.readlink(work_dir / "escape") == str(
        tmp_path / "outside")


def test_numbers_labels_and_latest_still_accepted(mgr, work_dir):
    cp = first_checkpoint(mgr, work_dir)
    assert mgr.checkpoint(str(work_dir), "labelled", label="known-good")["success"]
    (work_dir / "main.py").write_text("changed\n")
    for ref in ("1", "latest", "known-good", cp[:6].upper()):
        out = mgr.diff(str(work_dir), ref)
        assert out["success"] is True and out["hash"] == cp, (ref, out)
    out = mgr.restore(str(work_dir), "known-good")
    assert out["success"] is True and out["hash"] == cp


def test_a_git_commit_of_another_project_is_refused(mgr, work_dir, tmp_path):
    other = tmp_path / "other"
    write(other, {"o.txt": "o\n"})
    assert mgr.ensure_checkpoint(str(other), "other") is True
    first_checkpoint(mgr, work_dir)
    foreign = mgr.list_checkpoints(str(other))[0]["hash"]
    out = mgr.restore(str(work_dir), foreign)
    assert out["error"] == f"Checkpoint '{foreign}' not found"
    assert "not a checkpoint of this project" in out["detail"]


def test_hermes_project_hash_matches_ours(work_dir):
    assert hermes._project_hash(str(work_dir)) == project_hash(work_dir)
    assert hermes._validate_commit_hash("-p") is not None
    assert hermes._validate_file_path("../x", str(work_dir)) is not None
