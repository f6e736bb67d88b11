"""Two agent sessions in one directory (issue 45), through the Python API: a revert takes
back that session's step and its later steps alone, every byte another session wrote
stays, a file both changed keeps its bytes and is named, `rewind undo` and redo work as
for every revert, and one session alone reverts as it always did."""

from __future__ import annotations

import os

from test_restore_helpers import git_view, write


def begin(mgr, project, step_id: str, turn_id: str, session: str) -> None:
    out = mgr.begin_step(str(project), step_id, turn_id, session=session)
    assert out["success"], out


def end(mgr, project, step_id: str) -> None:
    out = mgr.end_step(str(project), step_id)
    assert out["success"], out


def step(mgr, project, step_id: str, turn_id: str, session: str, files: dict | None = None,
         delete: tuple[str, ...] = ()) -> None:
    begin(mgr, project, step_id, turn_id, session)
    write(project, files or {})
    for rel in delete:
        os.unlink(project / rel)
    end(mgr, project, step_id)


def test_the_issue_s_interleaving(mgr, project):
    """A (a1) writes a.txt; B (b1) writes b.txt; A (a2) writes a2.txt; B (b2) removes
    base.txt; A (a3) edits a.txt: reverting b1 takes back b1 and b2, nothing of A's."""
    write(project, {"base.txt": "base\n", "a.txt": "old a\n"})
    step(mgr, project, "a1", "ta1", "A", {"a.txt": "a by A\n"})
    step(mgr, project, "b1", "tb1", "B", {"b.txt": "b by B\n"})
    step(mgr, project, "a2", "ta2", "A", {"a2.txt": "a2 by A\n"})
    step(mgr, project, "b2", "tb2", "B", delete=("base.txt",))
    step(mgr, project, "a3", "ta3", "A", {"a.txt": "a by A, edited\n"})
    before = git_view(project)

    out = mgr.revert_to(str(project), "b1")
    assert out["success"], out
    assert out["session"] == "B" and out["turns"] == ["tb1", "tb2"]
    assert out["reverted_steps"] == ["b1", "b2"] and out["kept"] == []
    assert out["restored_files"] == ["base.txt"] and out["deleted_files"] == ["b.txt"]
    after = git_view(project)
    assert after[b"a.txt"][1] == b"a by A, edited\n" and after[b"a2.txt"][1] == b"a2 by A\n"
    assert after[b"base.txt"][1] == b"base\n" and b"b.txt" not in after
    # Every other file as A left it.
    assert {k: v for k, v in after.items() if k not in (b"base.txt", b"b.txt")} == \
        {k: v for k, v in before.items() if k not in (b"base.txt", b"b.txt")}


def test_a_file_the_other_session_changed_later_keeps_its_bytes(mgr, project):
    step(mgr, project, "b1", "tb1", "B", {"shared.txt": "B wrote this\n", "b.txt": "b\n"})
    step(mgr, project, "a1", "ta1", "A", {"shared.txt": "B wrote this\nA added this\n"})
    out = mgr.revert_to(str(project), "b1")
    assert out["success"], out
    assert out["kept"] == [{"path": "shared.txt", "when": "later",
                            "sessions": [{"agent": None, "session": "A"}]}]
    assert (project / "shared.txt").read_text() == "B wrote this\nA added this\n"
    assert not (project / "b.txt").exists()   # the rest of B's turn is taken back


def test_a_change_while_both_sessions_ran_is_kept_not_guessed(mgr, project):
    """The two sessions' steps overlap in time: a change in that stretch cannot be told
    apart, so it belongs to both and a revert of either keeps it."""
    begin(mgr, project, "a1", "ta1", "A")
    begin(mgr, project, "b1", "tb1", "B")
    write(project, {"both.txt": "who wrote me?\n"})
    end(mgr, project, "a1")
    write(project, {"b-only.txt": "B alone\n"})
    end(mgr, project, "b1")
    out = mgr.revert_to(str(project), "b1")
    assert out["success"], out
    assert [(k["path"], k["when"]) for k in out["kept"]] == [("both.txt", "same time")]
    assert (project / "both.txt").read_text() == "who wrote me?\n"
    assert not (project / "b-only.txt").exists()


def test_another_session_s_change_before_ours_stays(mgr, project):
    """B changes a file, then A changes it further: reverting A puts back B's bytes."""
    step(mgr, project, "b1", "tb1", "B", {"README.md": "B\n"})
    step(mgr, project, "a1", "ta1", "A", {"README.md": "B then A\n"})
    out = mgr.revert_to(str(project), "a1")
    assert out["success"] and out["kept"] == [], out
    assert (project / "README.md").read_text() == "B\n"


def test_undo_and_redo_of_a_session_revert(mgr, project, run_rewind):
    step(mgr, project, "b1", "tb1", "B", {"shared.txt": "B\n", "b.txt": "b\n"})
    step(mgr, project, "a1", "ta1", "A", {"shared.txt": "B and A\n", "a.txt": "a\n"})
    before = git_view(project)
    assert mgr.revert_to(str(project), "b1")["success"]
    assert not (project / "b.txt").exists()
    out = mgr.unrevert(str(project))
    assert out["success"] and out["session"] == "B" and out["kept"] == [], out
    assert git_view(project) == before
    assert mgr.revert_to(str(project), "b1")["success"]
    assert not (project / "b.txt").exists()
    proc = run_rewind("undo", "-C", project)
    assert proc.returncode == 0, proc.stderr
    assert git_view(project) == before


def test_redo_keeps_what_another_session_changed_since_the_revert(mgr, project):
    step(mgr, project, "b1", "tb1", "B", {"x.txt": "B\n"})
    assert mgr.revert_to(str(project), "b1")["success"]
    assert not (project / "x.txt").exists()
    step(mgr, project, "a1", "ta1", "A", {"x.txt": "A wrote x since\n"})
    out = mgr.unrevert(str(project))   # A's new step did not discard B's revert
    assert out["success"], out
    assert [k["path"] for k in out["kept"]] == ["x.txt"]
    assert (project / "x.txt").read_text() == "A wrote x since\n"


def test_a_session_s_new_step_discards_only_its_own_reverts(mgr, project):
    step(mgr, project, "b1", "tb1", "B", {"b.txt": "b\n"})
    assert mgr.revert_to(str(project), "b1")["success"]
    begun = mgr.begin_step(str(project), "a1", "ta1", session="A")
    assert begun["discarded_steps"] == []
    end(mgr, project, "a1")
    begun = mgr.begin_step(str(project), "b2", "tb2", session="B")
    assert begun["discarded_steps"] == ["b1"]
    end(mgr, project, "b2")
    out = mgr.unrevert(str(project))
    assert out["success"] is False and "nothing to redo" in out["error"]


def test_later_reverts_see_what_earlier_ones_took_back(mgr, project):
    """A's turn on top of B's, A reverted, then B: the file goes back to before B (A's
    change was taken back, so nothing of A's is in the way)."""
    step(mgr, project, "b1", "tb1", "B", {"README.md": "B\n"})
    step(mgr, project, "a1", "ta1", "A", {"README.md": "B then A\n"})
    assert mgr.revert_to(str(project), "a1")["success"]
    out = mgr.revert_to(str(project), "b1")
    assert out["success"] and out["kept"] == [], out
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"


def test_a_turn_two_sessions_share_needs_the_session(mgr, project):
    step(mgr, project, "a1", "t", "A", {"a.txt": "a\n"})
    step(mgr, project, "b1", "t", "B", {"b.txt": "b\n"})
    out = mgr.revert_to(str(project), "t")
    assert out["success"] is False and "2 sessions" in out["error"], out
    assert (project / "a.txt").exists() and (project / "b.txt").exists()
    out = mgr.revert_to(str(project), "t", session="B")
    assert out["success"] and out["deleted_files"] == ["b.txt"], out
    assert (project / "a.txt").exists()
