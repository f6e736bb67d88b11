"""Agent state documents and external actions on real stores: round trip, restore warnings,
invisible to the file tree, to `diff -r`-style comparisons and to a Hermes 0.19 reader."""

from __future__ import annotations

import json

import pygit2
from test_restore_helpers import git_view, manager, write

from rewindfs.fs.model import Model
from rewindfs.store import Layout, project_hash
from rewindfs.store.history.metadata import actions

STATE = {"kanban": {"todo": ["ship"], "done": ["spec"]}, "goal": {"text": "release 1.0"},
         "memory_index": ["mem/1", "mem/2"], "tool_history_tail": [{"tool": "ls", "ok": True}]}


def test_state_and_actions_round_trip(mgr, project, home):
    mgr.record_action(str(project), "github.pr.opened", 1234, "Open PR for the fix")
    mgr.record_action(str(project), "slack.message", "C1/42", "Told the team", reversible=True)
    made = mgr.checkpoint(str(project), "with state", state=STATE)
    assert made["success"] and made["taken"]
    got = mgr.state_of(str(project), made["hash"])
    assert got["success"] and got["state"] == STATE
    assert [(a["kind"], a["id"], a["reversible"]) for a in got["actions"]] == [
        ("github.pr.opened", "1234", False), ("slack.message", "C1/42", True)]
    pending = home / "checkpoints" / "store" / "actions" / f"{project_hash(project)}.jsonl"
    assert not pending.exists()  # carried now
    # the next checkpoint carries only what happened since
    write(project, {"README.md": "next\n"})
    nxt = mgr.checkpoint(str(project), "next")
    assert mgr.state_of(str(project), nxt["hash"])["actions"] == []
    assert mgr.state_of(str(project), "latest")["state"] == {}


def test_actions_wait_for_a_checkpoint_that_writes(mgr, project):
    first = mgr.checkpoint(str(project), "first")
    mgr.record_action(str(project), "deploy", "prod-7", "Deployed")
    same = mgr.checkpoint(str(project), "nothing changed")
    assert same["taken"] is False and same["hash"] == first["hash"]
    assert mgr.state_of(str(project), first["hash"])["actions"] == []
    write(project, {"README.md": "changed\n"})
    assert mgr.ensure_checkpoint(str(project), "auto")  # automatic checkpoints carry them too
    assert [a["id"] for a in mgr.state_of(str(project), "latest")["actions"]] == ["prod-7"]


def test_changed_state_alone_makes_a_checkpoint(mgr, project, files_of):
    one = mgr.checkpoint(str(project), "one", state={"goal": {"text": "a"}})
    same = mgr.checkpoint(str(project), "same state", state={"goal": {"text": "a"}})
    assert same["taken"] is False and same["hash"] == one["hash"]
    two = mgr.checkpoint(str(project), "new goal", state={"goal": {"text": "b"}})
    assert two["taken"] is True
    assert files_of(two["hash"]) == files_of(one["hash"])  # same files, new state
    assert mgr.state_of(str(project), "1")["state"] == {"goal": {"text": "b"}}
    assert mgr.state_of(str(project), "2")["state"] == {"goal": {"text": "a"}}


def test_state_is_not_in_the_file_tree(mgr, project, files_of, home):
    on_disk = git_view(project)
    made = mgr.checkpoint(str(project), "stateful", state=STATE)
    assert files_of(made["hash"]) == on_disk  # exactly the project's files, nothing added
    mgr.record_action(str(project), "email.sent", "m-1")
    write(project, {"README.md": "v2\n"})
    later = mgr.checkpoint(str(project), "later", state={"goal": {"text": "v2"}})
    # the mounted trees differ only in README.md: state is in xattrs, not files
    model = Model(Layout(home / "checkpoints"))
    old = _files(model.resolve("proj/2/"))
    new = _files(model.resolve("proj/1/"))
    assert set(old) == set(new) == {p.decode() for p in files_of(later["hash"])}
    assert [p for p in old if old[p] != new[p]] == ["README.md"]
    xattrs = model.resolve("proj/2/").xattrs()
    assert json.loads(xattrs[b"user.rewind.state.kanban"]) == STATE["kanban"]
    assert json.loads(model.resolve("proj/1/").xattrs()[b"user.rewind.actions"])[0]["kind"] \
        == "email.sent"


def test_restore_reports_state_and_later_actions(mgr, project):
    mgr.record_action(str(project), "github.issue.commented", "77")  # before the target
    target = mgr.checkpoint(str(project), "target", state={"goal": {"text": "t"}})
    mgr.record_action(str(project), "github.pr.opened", "1234", "Open PR")
    write(project, {"README.md": "changed\n"})
    mgr.checkpoint(str(project), "carries the PR")
    mgr.record_action(str(project), "npm.publish", "pkg@1.0.1", reversible=False)  # pending
    out = mgr.restore(str(project), target["hash"])
    assert out["success"], out
    assert out["state"] == {"goal": {"text": "t"}}
    assert [a["kind"] for a in out["external_actions"]] == ["github.pr.opened", "npm.publish"]
    assert out["warnings"][0] == "not undone by rollback: github.pr.opened #1234 (Open PR)"
    assert out["warnings"][1] == "not undone by rollback: npm.publish #pkg@1.0.1"
    # the pending action is still pending: the rollback's own snapshot does not carry it
    assert [a.id for a in actions.pending(mgr.layout, project_hash(project))] == ["pkg@1.0.1"]


def test_cli_restore_prints_warnings(mgr, project, run_rewind):
    target = mgr.checkpoint(str(project), "target", state={"kanban": {"todo": []}})
    mgr.record_action(str(project), "github.pr.opened", "1234")
    write(project, {"README.md": "changed\n"})
    proc = run_rewind("restore", target["short_hash"], "--yes", "-C", project)
    assert proc.returncode == 0, proc.stderr
    assert "rewind: warning: not undone by rollback: github.pr.opened #1234" in proc.stderr
    assert "agent state at" in proc.stdout and "kanban" in proc.stdout
    write(project, {"README.md": "again\n"})
    data = json.loads(run_rewind("restore", target["hash"], "--yes", "--json", "-C", project,
                                 check=True).stdout)
    assert data["warnings"] == ["not undone by rollback: github.pr.opened #1234"]
    assert data["state"] == {"kanban": {"todo": []}}


def test_undo_does_not_warn_about_actions_before_the_restore(mgr, project, run_rewind):
    first = mgr.checkpoint(str(project), "first")
    write(project, {"README.md": "changed\n"})
    mgr.record_action(str(project), "deploy", "d1")
    mgr.checkpoint(str(project), "second")
    assert mgr.restore(str(project), first["hash"])["warnings"] == [
        "not undone by rollback: deploy #d1"]
    proc = run_rewind("undo", "-C", project, check=True)
    assert "warning" not in proc.stderr


def test_invalid_state_and_actions_are_refused(mgr, project):
    count = len(mgr.list_checkpoints(str(project)))
    for bad in ({"bad name": 1}, {"x": object()}, ["not", "a", "dict"], {"": 1}):
        out = mgr.checkpoint(str(project), "bad", state=bad)
        assert out["success"] is False, bad
    assert len(mgr.list_checkpoints(str(project))) == count
    assert mgr.record_action(str(project), "", "1")["success"] is False
    assert mgr.record_action(str(project), "kind", None)["success"] is False
    assert mgr.state_of(str(project), "latest")["success"] is False  # no checkpoints yet


def test_git_notes_can_read_the_metadata(mgr, project, store_git, fsck):
    made = mgr.checkpoint(str(project), "noted", state={"goal": {"text": "g"}})
    ref = f"refs/notes/rewind/{project_hash(project)}"
    shown = store_git("notes", f"--ref={ref}", "show", made["hash"]).stdout
    assert json.loads(shown)["state"] == {"goal": {"text": "g"}}
    assert store_git("ls-tree", "-r", "--name-only", made["hash"]).stdout.split() \
        == sorted(p.decode() for p in git_view(project))
    fsck()


def test_notes_of_pruned_checkpoints_are_dropped(home, project, store_dir):
    small = manager(home, max_snapshots=2)
    made = []
    for i in range(4):
        write(project, {"README.md": f"{i}\n"})
        made.append(small.checkpoint(str(project), f"c{i}", state={"n": i})["hash"])
    repo = pygit2.Repository(str(store_dir))
    notes_tree = repo.references[f"refs/notes/rewind/{project_hash(project)}"].peel(pygit2.Tree)
    assert sorted(e.name for e in notes_tree) == sorted(made[-2:])


def test_show_prints_metadata_steps_state_and_actions(mgr, project, run_rewind):
    mgr.begin_step(str(project), "s1", "t1")
    write(project, {"feature.py": "print('hi')\n"})
    mgr.record_action(str(project), "github.pr.opened", "1234", "Open PR")
    mgr.end_step(str(project), "s1")
    mgr.checkpoint(str(project), "labelled", label="after-s1", state={"goal": {"text": "hi"}})
    proc = run_rewind("show", "2", "-C", project, check=True)  # the step's "after" checkpoint
    text = proc.stdout
    assert "reason:   after step s1" in text
    assert "step:     s1 of turn t1 (after)" in text
    assert "s1 (turn t1, done): after the step; changed feature.py" in text
    assert "github.pr.opened #1234: Open PR (irreversible)" in text
    data = json.loads(run_rewind("show", "after-s1", "--json", "-C", project,
                                 check=True).stdout)
    assert data["labels"] == ["after-s1"] and data["state"] == {"goal": {"text": "hi"}}
    # new state makes its own checkpoint, with the step's files but not the step's
    assert data["number"] == 1 and data["actions"] == [] and data["steps"] == []
    text = run_rewind("show", "-C", project, check=True).stdout  # latest by default
    assert "labels:   after-s1 (pinned" in text and 'goal: {"text": "hi"}' in text
    proc = run_rewind("show", "99", "-C", project)
    assert proc.returncode == 1 and proc.stderr.startswith("rewind: ")


def test_hermes_reader_sees_ordinary_checkpoints(mgr, project, hcm, files_of):
    hermes = hcm.CheckpointManager(enabled=True)
    original = git_view(project)
    mgr.record_action(str(project), "github.pr.opened", "1234")
    first = mgr.checkpoint(str(project), "stateful one", state=STATE, label="v1")
    mgr.begin_step(str(project), "s1", "t1")
    write(project, {"README.md": "by a step\n", "new.txt": "n\n"})
    mgr.end_step(str(project), "s1")
    listed = hermes.list_checkpoints(str(project))
    assert [c["reason"] for c in listed] == ["after step s1", "stateful one"]
    assert listed[1]["hash"] == first["hash"]
    assert set(files_of(first["hash"])) == set(original)
    out = hermes.restore(str(project), first["hash"])
    assert out["success"], out
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"
    assert (project / "new.txt").exists()  # Hermes restores files; it never deletes new ones
    # and Hermes's own checkpoint on top keeps our metadata readable
    write(project, {"README.md": "hermes\n"})
    hermes.new_turn()
    assert hermes.ensure_checkpoint(str(project), "hermes checkpoint")
    assert mgr.state_of(str(project), "v1")["state"] == STATE
    assert mgr.list_checkpoints(str(project))[0]["reason"] == "hermes checkpoint"


def _files(directory, prefix: str = "") -> dict[str, bytes]:
    out = {}
    for name, node in directory.entries():
        path = prefix + name.decode()
        if hasattr(node, "entries"):
            out.update(_files(node, path + "/"))
        else:
            out[path] = node.data()
    return out
