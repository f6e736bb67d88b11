"""Agent metadata in a real mount: labels as links, state documents and actions as xattrs,
and `diff -r` between checkpoints blind to them. Skipped where FUSE cannot be mounted."""

from __future__ import annotations

import json
import os
import subprocess

from test_restore_helpers import manager, write


def test_labels_state_and_actions_in_the_mount(home, project, mount):  # noqa: F811
    mgr = manager(home)
    first = mgr.checkpoint(str(project), "first", label="known-good",
                           state={"goal": {"text": "ship"}, "kanban": {"todo": ["a"]}})
    mgr.record_action(str(project), "github.pr.opened", "1234", "Open PR")
    mgr.begin_step(str(project), "s1", "t1")
    write(project, {"README.md": "changed\n"})
    mgr.end_step(str(project), "s1")
    root = mount()
    good = root / "proj" / "known-good"
    assert os.path.islink(good)
    assert os.getxattr(good, "user.rewind.hash") == first["hash"].encode()
    assert json.loads(os.getxattr(good, "user.rewind.state.goal")) == {"text": "ship"}
    names = set(os.listxattr(good))
    assert {"user.rewind.state.goal", "user.rewind.state.kanban"} <= names
    latest = root / "proj" / "latest"
    assert os.getxattr(latest, "user.rewind.step") == b"s1"
    assert os.getxattr(latest, "user.rewind.turn") == b"t1"
    assert os.getxattr(latest, "user.rewind.phase") == b"after"
    # `before step s1` wrote nothing (no change), so the step's "after" checkpoint carries it
    carried = json.loads(os.getxattr(latest, "user.rewind.actions"))
    assert [(a["kind"], a["id"]) for a in carried] == [("github.pr.opened", "1234")]
    # diff -r sees files only: the two checkpoints differ in README.md and nothing else
    proc = subprocess.run(["diff", "-r", f"{good}/", f"{latest}/"], capture_output=True,
                          text=True)
    assert proc.returncode == 1
    assert [line for line in proc.stdout.splitlines() if line.startswith(("diff", "Only"))] \
        == [f"diff -r {good}/README.md {latest}/README.md"]
    same = subprocess.run(["diff", "-r", f"{latest}/", str(project)], capture_output=True,
                          text=True)
    assert same.returncode == 0, same.stdout
