"""Verbs people expect (issue 15): delete one checkpoint, move or remove a label, forget
a project, `undo --dry-run`, and undo stepping back further than one restore."""

from __future__ import annotations

import json

import pytest

from rewindfs.store import take


def listed(run_rewind, project) -> list[dict]:
    return json.loads(run_rewind("list", project, "--json", check=True).stdout)


@pytest.fixture
def five(store, project):
    """c1..c5 (a.txt = 1..5); returns ids oldest first."""
    ids = []
    for i in range(1, 6):
        (project / "a.txt").write_text(f"{i}\n")
        ids.append(take(store, project, f"c{i}").commit)
    return ids


def test_delete_newest_and_oldest_keep_every_other_id(run_rewind, project, five, fsck):
    run_rewind("delete", "1", "-C", project, "-f", check=True)
    assert [c["hash"] for c in listed(run_rewind, project)] == five[3::-1]
    run_rewind("delete", five[0][:8], "-C", project, "-f", check=True)
    assert [c["hash"] for c in listed(run_rewind, project)] == five[3:0:-1]
    # the oldest left shows its change against the deleted one, not a first checkpoint's size
    oldest = listed(run_rewind, project)[-1]
    assert "bytes" not in oldest and oldest["insertions"] == 1
    fsck()


def test_delete_in_the_middle_recreates_newer_ones(run_rewind, project, five, store, fsck,
                                                   files_of):
    run_rewind("label", "v4", "2", "-C", project, check=True)
    proc = run_rewind("delete", "3", "-C", project, "-f", "--json", check=True)
    done = json.loads(proc.stdout)
    assert done["position"] == "middle" and set(done["ids_changed"]) == {five[3], five[4]}
    data = listed(run_rewind, project)
    assert [c["reason"] for c in data] == ["c5", "c4", "c2", "c1"]
    assert data[2]["hash"] == five[1] and data[3]["hash"] == five[0]  # older ids unchanged
    assert data[1]["labels"] == ["v4"] and data[1]["hash"] == done["ids_changed"][five[3]]
    assert files_of(data[0]["hash"]) == files_of(five[4])  # same files, new id
    assert data[1]["files_changed"] == 1  # c4's change is now counted against c2
    assert five[2] not in {c["hash"] for c in data}
    fsck()


def test_delete_asks_and_refuses_without_a_terminal(run_rewind, project, five):
    proc = run_rewind("delete", "3", "-C", project)
    assert proc.returncode == 1 and "rerun with -f" in proc.stderr
    assert "2 newer checkpoint(s) will get new ids" in proc.stderr
    assert len(listed(run_rewind, project)) == 5


def test_label_set_move_remove(run_rewind, project, five):
    run_rewind("label", "v1", "3", "-C", project, check=True)
    taken = run_rewind("label", "v1", "2", "-C", project)
    assert taken.returncode == 1 and "already names" in taken.stderr
    moved = run_rewind("label", "v1", "2", "--move", "-C", project, check=True)
    assert f"moved from {five[2][:8]}" in moved.stdout
    assert listed(run_rewind, project)[1]["labels"] == ["v1"]
    names = json.loads(run_rewind("label", "-C", project, "--json", check=True).stdout)
    assert names == {"v1": five[3]}
    run_rewind("label", "-d", "v1", "-C", project, check=True)
    assert all(not c["labels"] for c in listed(run_rewind, project))
    missing = run_rewind("label", "-d", "v1", "-C", project)
    assert missing.returncode == 1 and "no label" in missing.stderr


def test_removing_the_only_label_of_a_pruned_checkpoint_says_so(run_rewind, project, store):
    first = take(store, project, "first").commit
    run_rewind("label", "keep", first[:8], "-C", project, check=True)
    for i in range(3):
        (project / "a.txt").write_text(f"{i}\n")
        take(store, project, f"later {i}", keep=2)
    assert first in {c["hash"] for c in listed(run_rewind, project)}  # kept by its label
    proc = run_rewind("label", "-d", "keep", "-C", project, check=True)
    assert "no longer listed" in proc.stdout
    assert first not in {c["hash"] for c in listed(run_rewind, project)}


def test_forget_a_project(run_rewind, project, five, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("x\n")
    run_rewind("checkpoint", other, check=True)
    refused = run_rewind("forget", "-C", project)
    assert refused.returncode == 1 and "rerun with -f" in refused.stderr
    run_rewind("forget", project, "-f", check=True)
    assert listed(run_rewind, project) == []
    assert (project / "a.txt").read_text() == "5\n"  # the files stay
    data = json.loads(run_rewind("list", "--all-projects", "--json", check=True).stdout)
    assert [d["directory"] for d in data] == [str(other.resolve())]
    again = run_rewind("forget", project, "-f")
    assert again.returncode == 1 and "no checkpoints" in again.stderr


# -- undo ---------------------------------------------------------------------------------


@pytest.fixture
def two_restores(run_rewind, project, five):
    """a.txt (edited) restored to c2, then notes.txt created and the whole project restored
    to c4, which deletes it: two journal entries."""
    (project / "a.txt").write_text("edited\n")
    run_rewind("restore", "4", "a.txt", "-C", project, "--yes", check=True)
    (project / "notes.txt").write_text("mine\n")
    run_rewind("restore", "2", "-C", project, "--yes", check=True)
    return five


def test_undo_dry_run_changes_nothing(run_rewind, project, two_restores):
    before = {p.name: p.read_text() for p in project.glob("*.txt")}
    proc = run_rewind("undo", "--dry-run", "-C", project, check=True)
    assert "nothing was changed" in proc.stdout.splitlines()[0]
    assert "create 1: notes.txt" in proc.stdout and "overwrite 1: a.txt" in proc.stdout
    assert {p.name: p.read_text() for p in project.glob("*.txt")} == before
    data = json.loads(run_rewind("undo", "--dry-run", "--json", "-C", project,
                                 check=True).stdout)
    assert data["success"] is True and data["plan"]["create"] == 1
    assert json.loads(run_rewind("undo", "--list", "--json", "-C", project,
                                 check=True).stdout)[0]["step"] == 1


def test_undo_steps_back_through_several_restores(run_rewind, project, two_restores):
    stack = json.loads(run_rewind("undo", "--list", "--json", "-C", project, check=True).stdout)
    assert len(stack) == 2
    run_rewind("undo", "--steps", "2", "-C", project, check=True)
    assert (project / "a.txt").read_text() == "edited\n"  # before the first restore
    assert (project / "notes.txt").read_text() == "mine\n"
    assert json.loads(run_rewind("undo", "--list", "--json", "-C", project,
                                 check=True).stdout) == []
    too_far = run_rewind("undo", "--steps", "1", "-C", project)
    assert too_far.returncode == 1 and "0 restore(s)" in too_far.stderr
    # a plain undo still reverses the last undo (a redo of the second restore undone)
    run_rewind("undo", "-C", project, check=True)
    assert (project / "a.txt").read_text() == "2\n"


def test_undo_list_skips_undone_restores(run_rewind, project, two_restores):
    run_rewind("undo", "-C", project, check=True)  # takes back the restore to 2
    stack = json.loads(run_rewind("undo", "--list", "--json", "-C", project, check=True).stdout)
    assert len(stack) == 1 and stack[0]["target"] == two_restores[1]  # the restore to c2
    run_rewind("undo", "--steps", "1", "-C", project, check=True)
    assert (project / "a.txt").read_text() == "edited\n"
