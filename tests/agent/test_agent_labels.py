"""Named checkpoints end to end: take with a label, then restore, diff, show and browse by
it; labels are unique per project and survive pruning (and git gc) as pinned."""

from __future__ import annotations

import json

from test_restore_helpers import git_view, manager, write

from rewindfs.fs.model import Model
from rewindfs.store import Layout, checkpoints, project_hash


def test_restore_and_diff_by_label(mgr, project, run_rewind):
    made = mgr.checkpoint(str(project), "known good", label="known-good")
    assert made["success"] and made["label"] == "known-good"
    good = git_view(project)
    write(project, {"README.md": "broken\n", "junk.txt": "junk\n"})
    mgr.checkpoint(str(project), "later")

    diff = mgr.diff(str(project), "known-good")
    assert diff["success"] and diff["hash"] == made["hash"]
    assert sorted(diff["files"]) == ["README.md", "junk.txt"]
    proc = run_rewind("diff", "known-good", "--name-only", "-C", project, check=True)
    assert sorted(proc.stdout.split()) == ["README.md", "junk.txt"]
    proc = run_rewind("diff", "known-good", "latest", "--stat", "-C", project, check=True)
    assert "README.md" in proc.stdout

    out = mgr.restore(str(project), "known-good")
    assert out["success"] and out["hash"] == made["hash"]
    assert git_view(project) == good
    write(project, {"README.md": "broken again\n"})
    proc = run_rewind("restore", "known-good", "--yes", "-C", project)
    assert proc.returncode == 0, proc.stderr
    assert git_view(project) == good
    shown = json.loads(run_rewind("show", "known-good", "--json", "-C", project,
                                  check=True).stdout)
    assert shown["hash"] == made["hash"] and shown["labels"] == ["known-good"]


def test_labels_are_unique_per_project(mgr, project, tmp_path):
    first = mgr.checkpoint(str(project), "one", label="release")
    again = mgr.checkpoint(str(project), "same files", label="release")
    assert again["success"] and again["hash"] == first["hash"]  # nothing changed: same one
    write(project, {"README.md": "two\n"})
    clash = mgr.checkpoint(str(project), "two", label="release")
    assert clash["success"] is False and "already names" in clash["error"]
    history = checkpoints(mgr.store.repo, project_hash(project))
    assert [c.labels for c in history if c.labels] == [["release"]]
    assert history[-1].id == first["hash"]
    # a malformed label is refused before anything is written
    count = len(history)
    write(project, {"README.md": "three\n"})
    assert mgr.checkpoint(str(project), "bad", label="12")["success"] is False
    assert len(checkpoints(mgr.store.repo, project_hash(project))) == count
    # another project may use the same name
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("o\n")
    assert mgr.checkpoint(str(other), "o", label="release")["success"]


def test_labelled_checkpoint_pinned_through_pruning_and_gc(home, project, run_rewind,
                                                           store_git):
    small = manager(home, max_snapshots=2)
    pinned = small.checkpoint(str(project), "pin me", label="pinned")
    pinned_files = git_view(project)
    for i in range(5):
        write(project, {"README.md": f"version {i}\n"})
        assert small.checkpoint(str(project), f"v{i}")["taken"]
    listed = small.list_checkpoints(str(project))
    assert [c["reason"] for c in listed] == ["v4", "v3", "pin me"]
    assert listed[-1]["labels"] == ["pinned"]
    proc = run_rewind("list", project, check=True)
    pinned_line = [line for line in proc.stdout.splitlines() if "pin me" in line]
    assert pinned_line and "[pinned]" in pinned_line[0]

    store_git("gc", "--prune=now", "--quiet")  # the boundary lets gc drop v0..v2
    out = small.restore(str(project), "pinned")
    assert out["success"], out
    assert git_view(project) == pinned_files
    assert pinned["hash"] == out["hash"]


def test_mount_shows_a_link_per_label(mgr, project, home):
    made = mgr.checkpoint(str(project), "good", label="good")
    write(project, {"README.md": "later\n"})
    mgr.checkpoint(str(project), "later")
    model = Model(Layout(home / "checkpoints"))
    link = model.resolve("proj/good")
    target = model.resolve("proj").lookup(link.target())
    assert target.checkpoint.id == made["hash"]
    readme = model.resolve("proj/good/README.md")
    assert readme.data() == b"# sample\n\nA sample project.\n"
