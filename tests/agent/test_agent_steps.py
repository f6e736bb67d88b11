"""Agent steps and turns on real stores: what each step changed, revert to a step or turn,
redo, and how reverts interact with new steps, undo, pruning and other processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_restore_helpers import chain, git_view, manager, picture, without_empty_dirs, write

from rewindfs.store import checkpoints, project_hash


def step(mgr, project, step_id: str, turn_id: str, files: dict | None = None,
         delete: tuple[str, ...] = ()) -> dict:
    """One model step: begin, write `files`, delete `delete`, end."""
    began = mgr.begin_step(str(project), step_id, turn_id)
    assert began["success"], began
    write(project, files or {})
    for rel in delete:
        os.unlink(project / rel)
    ended = mgr.end_step(str(project), step_id)
    assert ended["success"], ended
    return ended


def test_step_records_changed_created_and_deleted_files(mgr, project, store_dir):
    ended = step(mgr, project, "s1", "t1", {"README.md": "changed\n", "src/new.py": "x = 1\n"},
                 delete=("docs/guide.txt",))
    assert sorted(ended["changed_files"]) == ["README.md", "docs/guide.txt", "src/new.py"]
    assert ended["created_files"] == ["src/new.py"]
    assert ended["deleted_files"] == ["docs/guide.txt"]
    assert ended["turn_id"] == "t1" and ended["taken"] is True
    subjects = [s for _, s in chain(store_dir, project)]
    assert subjects == ["after step s1", "before step s1"]
    history = checkpoints_of(mgr, project)
    assert history[0].trailers["Rewind-Phase"] == "after"
    assert history[1].trailers["Rewind-Phase"] == "before"
    assert {c.trailers["Rewind-Step"] for c in history} == {"s1"}
    assert {c.trailers["Rewind-Turn"] for c in history} == {"t1"}


def test_step_that_changes_nothing_writes_nothing(mgr, project, store_dir):
    step(mgr, project, "s1", "t1", {"a.txt": "a\n"})
    before = chain(store_dir, project)
    began = mgr.begin_step(str(project), "s2", "t1")
    ended = mgr.end_step(str(project), "s2")
    assert began["taken"] is False and ended["taken"] is False
    assert ended["changed_files"] == []
    assert chain(store_dir, project) == before
    # the step's "before" is the newest checkpoint, which holds the same files
    assert began["hash"] == ended["hash"] == before[0][0]


def test_revert_to_step_reverts_it_and_later_steps_only(mgr, project):
    step(mgr, project, "s1", "t1", {"one.txt": "1\n", "README.md": "s1\n"})
    state_after_s1 = git_view(project)
    step(mgr, project, "s2", "t2", {"src/pkg/core.py": "broken\n", "made/by/s2.txt": "s2\n"})
    step(mgr, project, "s3", "t2", {"README.md": "s3\n"}, delete=("docs/guide.txt",))
    write(project, {"notes-by-person.txt": "mine\n"})  # outside any step

    out = mgr.revert_to(str(project), "s2")
    assert out["success"], out
    assert out["reverted_steps"] == ["s2", "s3"]
    assert out["turns"] == ["t2"] and out["target_step"] == "s2" and out["target_turn"] == "t2"
    assert out["partial_turn"] is None  # s2 was t2's first step: the whole turn is undone
    assert sorted(out["deleted_files"]) == ["made/by/s2.txt"]
    assert not (project / "made").exists()  # directories the step created go too
    view = git_view(project)
    assert view.pop(b"notes-by-person.txt")[1] == b"mine\n"
    assert view == state_after_s1


def test_revert_to_turn_starts_at_its_first_step(mgr, project):
    original = git_view(project)
    step(mgr, project, "s1", "t1", {"README.md": "t1\n"})
    step(mgr, project, "s2", "t1", {"t1b.txt": "t1\n"})
    step(mgr, project, "s3", "t2", {"README.md": "t2\n"})
    out = mgr.revert_to(str(project), "t1")
    assert out["success"] and out["reverted_steps"] == ["s1", "s2", "s3"]
    assert out["turns"] == ["t1", "t2"]
    assert git_view(project) == original


def test_revert_to_a_later_step_of_a_turn_reports_the_partial_turn(mgr, project):
    step(mgr, project, "s1", "t1", {"a.txt": "a\n"})
    step(mgr, project, "s2", "t1", {"b.txt": "b\n"})
    out = mgr.revert_to(str(project), "s2")
    assert out["turns"] == ["t1"] and out["partial_turn"] == "t1"
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()


def test_person_edit_between_steps_survives_the_revert(mgr, project):
    step(mgr, project, "s1", "t1", {"README.md": "agent 1\n"})
    write(project, {"docs/guide.txt": "edited by a person between steps\n"})
    step(mgr, project, "s2", "t2", {"docs/guide.txt": "agent 2\n"})
    out = mgr.revert_to(str(project), "s1")
    assert out["success"], out
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"
    # each file goes back to before the first reverted step that changed it
    assert (project / "docs/guide.txt").read_text() == "edited by a person between steps\n"


def test_unrevert_restores_the_state_before_the_revert(mgr, project):
    step(mgr, project, "s1", "t1", {"README.md": "s1\n"})
    step(mgr, project, "s2", "t2", {"deep/new/file.txt": "s2\n"}, delete=("docs/guide.txt",))
    before_revert = without_empty_dirs(picture(project))
    assert mgr.revert_to(str(project), "t1")["success"]
    assert not (project / "deep").exists() and (project / "docs/guide.txt").exists()
    out = mgr.unrevert(str(project))
    assert out["success"], out
    assert out["restored_steps"] == ["s1", "s2"] and out["turns"] == ["t1", "t2"]
    assert without_empty_dirs(picture(project)) == before_revert
    assert not (project / "docs").exists() or not any((project / "docs").iterdir())
    again = mgr.unrevert(str(project))
    assert again["success"] is False and "nothing to redo" in again["error"]


def test_reverts_stack_and_redo_in_reverse_order(mgr, project):
    step(mgr, project, "s1", "t1", {"f.txt": "1\n"})
    step(mgr, project, "s2", "t2", {"f.txt": "2\n"})
    step(mgr, project, "s3", "t3", {"f.txt": "3\n"})
    assert mgr.revert_to(str(project), "s3")["turns"] == ["t3"]
    assert (project / "f.txt").read_text() == "2\n"
    assert mgr.revert_to(str(project), "s2")["turns"] == ["t2"]  # s3 is reverted already
    assert (project / "f.txt").read_text() == "1\n"
    assert mgr.unrevert(str(project))["turns"] == ["t2"]
    assert (project / "f.txt").read_text() == "2\n"
    assert mgr.unrevert(str(project))["turns"] == ["t3"]
    assert (project / "f.txt").read_text() == "3\n"
    reverted = mgr.revert_to(str(project), "s3")
    assert reverted["success"] and reverted["reverted_steps"] == ["s3"]


def test_new_step_after_revert_discards_the_reverted_steps(mgr, project):
    step(mgr, project, "s1", "t1", {"f.txt": "1\n"})
    step(mgr, project, "s2", "t2", {"f.txt": "2\n"})
    mgr.revert_to(str(project), "s2")
    began = mgr.begin_step(str(project), "s3", "t2-again")
    assert began["discarded_steps"] == ["s2"]
    write(project, {"g.txt": "g\n"})
    mgr.end_step(str(project), "s3")
    out = mgr.unrevert(str(project))
    assert out["success"] is False and "nothing to redo" in out["error"]
    gone = mgr.revert_to(str(project), "s2")
    assert gone["success"] is False and "already reverted" in gone["error"]
    assert mgr.revert_to(str(project), "s3")["success"]
    assert (project / "f.txt").read_text() == "1\n" and not (project / "g.txt").exists()


def test_revert_of_a_step_still_running(mgr, project):
    mgr.begin_step(str(project), "s1", "t1")
    write(project, {"half.txt": "half done\n"})
    out = mgr.revert_to(str(project), "s1")  # no end_step: what it did so far is settled
    assert out["success"] and out["deleted_files"] == ["half.txt"]
    assert not (project / "half.txt").exists()


def test_file_created_and_deleted_by_later_steps(mgr, project):
    step(mgr, project, "s1", "t1", {"tmp.txt": "scratch\n"})
    step(mgr, project, "s2", "t1", delete=("tmp.txt",))
    out = mgr.revert_to(str(project), "s1")
    assert out["success"], out
    assert not (project / "tmp.txt").exists()


def test_revert_is_undoable_with_rewind_undo(mgr, project, run_rewind):
    step(mgr, project, "s1", "t1", {"README.md": "agent\n", "new.txt": "n\n"})
    before = git_view(project)
    mgr.revert_to(str(project), "s1")
    proc = run_rewind("undo", "-C", project)
    assert proc.returncode == 0, proc.stderr
    assert git_view(project) == before


def test_revert_reaches_steps_pruned_from_the_list(home, project):
    small = manager(home, max_snapshots=2)
    original = git_view(project)
    for i in range(5):
        step(small, project, f"s{i}", f"t{i}", {f"f{i}.txt": f"{i}\n"})
    repo = small.store.repo
    assert len(checkpoints(repo, project_hash(project))) == 2  # s0's checkpoints are unlisted
    out = small.revert_to(str(project), "t0")
    assert out["success"], out
    assert git_view(project) == original


def test_step_log_is_shared_between_processes(mgr, project, home):
    script = (
        "import sys; from rewindfs.agent.manager import CheckpointManager as M\n"
        "from pathlib import Path\n"
        "m = M(enabled=True, base=sys.argv[1]); p = sys.argv[2]\n"
        "assert m.begin_step(p, 'remote', 'turn-r')['success']\n"
        "Path(p, 'remote.txt').write_text('from another process\\n')\n"
        "assert m.end_step(p, 'remote')['success']\n"
    )
    subprocess.run([sys.executable, "-c", script, str(home / "checkpoints"), str(project)],
                   check=True, timeout=60)
    out = mgr.revert_to(str(project), "turn-r")
    assert out["success"] and out["deleted_files"] == ["remote.txt"]
    log = home / "checkpoints" / "store" / "steps" / f"{project_hash(project)}.jsonl"
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events == ["begin", "end", "revert"]


def test_errors_come_back_as_results(mgr, home, project, tmp_path):
    assert mgr.end_step(str(project), "never")["success"] is False
    assert "no step or turn" in mgr.revert_to(str(project), "nope")["error"]
    assert mgr.unrevert(str(project))["success"] is False
    for bad in ("", "a\nb", "x" * 500):
        assert mgr.begin_step(str(project), bad, "t")["success"] is False
    assert mgr.begin_step(str(tmp_path / "missing"), "s", "t")["success"] is False
    off = manager(home)
    off.enabled = False
    assert off.begin_step(str(project), "s", "t")["success"] is False


def test_steps_listing(mgr, project):
    step(mgr, project, "s1", "t1", {"a.txt": "a\n"})
    step(mgr, project, "s2", "t1", {"b.txt": "b\n"})
    mgr.revert_to(str(project), "s2")
    listed = mgr.steps.steps(str(project))
    assert [(s["step_id"], s["status"]) for s in listed] == [("s1", "done"), ("s2", "reverted")]
    assert listed[0]["created_files"] == ["a.txt"]


def checkpoints_of(mgr, project):
    return checkpoints(mgr.store.repo, project_hash(project))


def test_revert_past_gc_is_a_clear_error(home, project, store_git):
    small = manager(home, max_snapshots=2)
    for i in range(5):
        step(small, project, f"s{i}", f"t{i}", {f"f{i}.txt": f"{i}\n"})
    store_git("gc", "--prune=now", "--quiet")
    before = git_view(project)
    out = small.revert_to(str(project), "t0")
    assert out["success"] is False and "too old to revert" in out["error"]
    assert git_view(project) == before
    assert small.revert_to(str(project), "t4")["success"]  # recent steps still revert


def test_cli_revert_and_redo(mgr, project, run_rewind):
    """`rewind revert TURN` / `rewind redo` drive the same revert_to / unrevert."""
    step(mgr, project, "s1", "t1", {"a.txt": "agent one\n"})
    step(mgr, project, "s2", "t2", {"a.txt": "agent two\n", "new.txt": "created\n"})
    proc = run_rewind("revert", "t2", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["turns"] == ["t2"]
    assert (project / "a.txt").read_text() == "agent one\n"
    assert not (project / "new.txt").exists()
    proc = run_rewind("redo", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "a.txt").read_text() == "agent two\n"
    assert (project / "new.txt").read_text() == "created\n"
    proc = run_rewind("revert", "no-such-step", cwd=project)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
