"""The history of a deleted or moved project (issue 14): quarantine, shown and usable from
the command line and the mount; moved projects adopted, by hand and automatically; an
unmounted drive kept without quarantine. Real stores, real `rewind` processes, a real
FUSE mount, real mounts and unmounts (in a private mount namespace)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pygit2
import pytest
from conftest import REWIND, isolated_git_env

from rewindfs.agent.manager import CheckpointManager
from rewindfs.store import Layout, Store, checkpoints, project_hash, set_label, take
from rewindfs.store.history import adopt
from rewindfs.store.history.projects import read_record
from rewindfs.store.history.verdict import State, classify
from rewindfs.store.maintenance import sweep

DAY = 86400


def project_at(path: Path, versions: int, store: Store) -> list[str]:
    """A project with a sibling (its parent stays populated when it goes) and `versions`
    checkpoints."""
    path.mkdir(parents=True)
    (path.parent / "neighbour.txt").write_text("next to the project\n")
    (path / "src").mkdir()
    made = []
    for i in range(versions):
        (path / "src" / "app.py").write_text(f"print({i})\n")
        (path / "notes.md").write_text(f"version {i}\n")
        made.append(take(store, path, f"edit {i}").commit)
    return made


def history(layout: Layout, wd: Path) -> list[str]:
    return [c.id for c in checkpoints(Store(layout).repo, project_hash(wd))]


def status_of(run_rewind, wd: Path) -> dict:
    data = json.loads(run_rewind("status", "--json", check=True).stdout)
    return next(p for p in data["projects"] if p["workdir"] == str(wd))


# -- deleted: quarantined, listed, restorable, removed only after the quarantine ----------

def test_deleted_project_is_quarantined_listed_and_restorable(run_rewind, store, layout,
                                                              tmp_path):
    wd = tmp_path / "work" / "proj"
    made = project_at(wd, 3, store)
    shutil.rmtree(wd)  # the agent's `rm -rf`
    text = run_rewind("status", check=True).stdout
    assert f"{wd}  deleted since " in text and "rewind restore latest --to DIR" in text
    row = status_of(run_rewind, wd)
    assert row["state"] == "deleted" and row["exists"] is False
    assert row["quarantine_until"] == pytest.approx(row["deleted_at"] + 7 * DAY)
    listed = json.loads(run_rewind("list", str(wd), "--json", check=True).stdout)
    assert [c["hash"] for c in listed] == list(reversed(made))
    out = tmp_path / "recovered"
    run_rewind("restore", "2", "--to", str(out), "-C", str(wd), check=True)
    assert (out / "src" / "app.py").read_text() == "print(1)\n"
    # the automatic sweep keeps it, however often it runs ...
    for _ in range(2):
        report = sweep.run(layout, sweep.Policy(retention_days=7))
        assert (report.deleted_orphan, report.quarantined) == (0, 1)
    assert history(layout, wd) == list(reversed(made))
    # ... until the quarantine is over
    record = layout.project_record(project_hash(wd))
    data = json.loads(record.read_text())
    data["deleted_at"] = data["last_touch"] = time.time() - 8 * DAY
    record.write_text(json.dumps(data))
    assert status_of(run_rewind, wd)["state"] == "orphan"
    assert sweep.run(layout, sweep.Policy(retention_days=7)).deleted_orphan == 1
    assert read_record(layout, project_hash(wd)) is None


def test_explicit_prune_removes_a_quarantined_project_after_confirmation(
        run_rewind, store, layout, tmp_path):
    wd = tmp_path / "work" / "proj"
    project_at(wd, 2, store)
    shutil.rmtree(wd)
    refused = run_rewind("prune")  # no terminal to ask on: refused, nothing changed
    assert refused.returncode == 1 and "-f" in refused.stderr
    assert f"deleted {wd}  (deleted since" in refused.stdout
    assert read_record(layout, project_hash(wd)) is not None
    kept = json.loads(run_rewind("prune", "-f", "--keep-orphans", "--json", check=True).stdout)
    assert (kept["deleted_orphan"], kept["quarantined"]) == (0, 1)
    report = json.loads(run_rewind("prune", "-f", "--json", check=True).stdout)
    assert report["deleted_orphan"] == 1
    assert read_record(layout, project_hash(wd)) is None


def test_deleted_project_stays_in_the_mount(store, layout, tmp_path, mount):  # noqa: F811
    wd = tmp_path / "work" / "proj"
    project_at(wd, 2, store)
    shutil.rmtree(wd)
    sweep.run(layout, sweep.Policy())
    root = mount()
    assert (root / "proj" / "latest" / "src" / "app.py").read_text() == "print(1)\n"
    assert (root / "proj" / "2" / "notes.md").read_text() == "version 0\n"


# -- moved: adopted automatically, or by hand -----------------------------------------------

def test_moved_project_is_adopted_by_its_first_checkpoint(run_rewind, store, layout, tmp_path,
                                                          home, fsck):
    old, new = tmp_path / "src" / "app", tmp_path / "work" / "app"
    made = project_at(old, 3, store)
    h_old, h_new = project_hash(old), project_hash(new)
    set_label(store, h_old, "release", made[1])
    mgr = CheckpointManager(enabled=True, base=layout.base, auto_prune=False)
    mgr.begin_step(str(old), "s1", "t1")
    (old / "notes.md").write_text("edited in a step\n")
    mgr.end_step(str(old), "s1")
    mgr.record_action(str(old), "github.pr.opened", "77", "Open PR")
    before = history(layout, old)
    new.parent.mkdir(parents=True)
    old.rename(new)  # `mv src/app work/app`
    proc = run_rewind("checkpoint", str(new), "-m", "first at the new place", check=True)
    assert f"{old} was moved here" in proc.stdout
    after = history(layout, new)
    assert after[1:] == before  # one history: the old checkpoints, then the new one
    repo = pygit2.Repository(str(layout.store))
    assert repo[after[0]].tree_id == repo[before[0]].tree_id
    assert "Rewind-Moved-From: " + str(old) in repo[after[0]].message
    assert not [n for n in repo.references if h_old in n]
    assert str(repo.references[f"refs/rewind/labels/{h_new}/release"].target) == made[1]
    assert not layout.project_record(h_old).exists()
    record = read_record(layout, h_new)
    assert record.extra["moved_from"] == [str(old)]
    assert record.created_at == pytest.approx(json.loads(
        run_rewind("status", "--json", check=True).stdout)["projects"][0]["created_at"])
    assert (layout.store / "steps" / f"{h_new}.jsonl").exists()
    assert not (layout.store / "steps" / f"{h_old}.jsonl").exists()
    listed = json.loads(run_rewind("list", str(new), "--json", check=True).stdout)
    assert [c["hash"] for c in listed] == after
    assert [c["hash"] for c in listed if "release" in c.get("labels", [])] == [made[1]]
    # the step log came along: the step can be reverted at the new path
    revert = run_rewind("revert", "s1", "-C", str(new), check=True)
    assert revert.returncode == 0 and (new / "notes.md").read_text() == "version 2\n"
    assert status_of(run_rewind, new)["state"] == "live"
    fsck()


def test_moved_and_changed_project_is_adopted_by_hand(run_rewind, store, layout, tmp_path):
    old, new = tmp_path / "a" / "app", tmp_path / "b" / "app"
    made = project_at(old, 2, store)
    new.parent.mkdir()
    old.rename(new)
    (new / "notes.md").write_text("changed before any checkpoint here\n")
    assert classify(read_record(layout, project_hash(old)), 7) is State.DELETED
    proc = run_rewind("adopt", str(old), str(new), check=True)
    assert "adopted 2 checkpoint(s)" in proc.stdout
    assert history(layout, new) == list(reversed(made))
    taken = run_rewind("checkpoint", str(new), check=True)
    assert "moved here" not in taken.stdout
    assert history(layout, new)[1:] == list(reversed(made))
    assert read_record(layout, project_hash(old)) is None


def test_adopt_refusals(run_rewind, store, layout, tmp_path):
    old, new, other = tmp_path / "a" / "app", tmp_path / "b" / "app", tmp_path / "c" / "x"
    project_at(old, 1, store)
    project_at(other, 1, store)
    new.mkdir(parents=True)
    (new / "f").write_text("x\n")

    def refused(*args: str, code: int = 1) -> str:
        proc = run_rewind("adopt", *map(str, args))
        assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        return proc.stderr

    assert "still exists" in refused(old, new)
    shutil.rmtree(old)
    assert "no checkpoints" in refused(tmp_path / "never", new)
    assert "checkpoint(s) of its own" in refused(old, other)
    assert "not found" in refused(old, tmp_path / "missing")
    assert "same directory" in refused(old, old.parent / "." / "app")
    assert history(layout, old) and history(layout, other)  # nothing changed
    json_out = json.loads(run_rewind("adopt", str(old), str(new), "--json", check=True).stdout)
    assert json_out["checkpoints"] == 1 and json_out["new_workdir"] == str(new)


def test_no_automatic_adoption_when_in_doubt(store, layout, tmp_path):
    """Two deleted projects with the same last tree, or one whose directory is merely
    missing (no evidence it was deleted): the new project starts its own history."""
    twins = [tmp_path / "one" / "app", tmp_path / "two" / "app"]
    for wd in twins:
        project_at(wd, 1, store)
    copy = tmp_path / "copy"
    shutil.copytree(twins[0], copy)
    for wd in twins:
        shutil.rmtree(wd)
    result = take(Store(layout), copy, "first")
    assert result.adopted_from is None and len(history(layout, copy)) == 1
    assert all(len(history(layout, wd)) == 1 for wd in twins)
    # a project on a missing volume (its parent gone too) is not adopted either
    gone = tmp_path / "volume" / "app"
    project_at(gone, 1, store)
    copy2 = tmp_path / "copy2"
    shutil.copytree(gone, copy2)
    (copy2 / "neighbour.txt").unlink(missing_ok=True)
    shutil.rmtree(gone.parent)
    assert take(Store(layout), copy2, "first").adopted_from is None
    assert len(history(layout, gone)) == 1


def test_continue_moved_leaves_a_project_with_history_alone(store, layout, tmp_path):
    old = tmp_path / "a" / "app"
    project_at(old, 1, store)
    existing = tmp_path / "b" / "app"
    shutil.copytree(old, existing)
    take(Store(layout), existing, "own history")
    shutil.rmtree(old)
    project = Store(layout).project(existing)
    tree = pygit2.Repository(str(layout.store)).references[project.ref].peel(pygit2.Commit)
    assert adopt.continue_moved(project, tree.tree_id) is None
    assert len(history(layout, old)) == 1


# -- an unmounted drive: missing, never quarantined ----------------------------------------

DRIVE = r"""
set -e
mount -t tmpfs drive "$MP"
mkdir "$MP/proj"
echo one > "$MP/proj/a.txt"
"$REWIND" checkpoint "$MP/proj" -m "on the drive" >/dev/null
echo two > "$MP/proj/a.txt"
"$REWIND" checkpoint "$MP/proj" -m "still on the drive" >/dev/null
umount "$MP"
"$REWIND" status --json > "$OUT/unmounted.json"
"$REWIND" prune -f --json > "$OUT/prune-unmounted.json"
# another volume (empty) mounted at the same place: a different directory there
mount -t tmpfs other "$MP"
"$REWIND" status --json > "$OUT/other-volume.json"
umount "$MP"
# an empty volume mounted there again: tmpfs reuses the device number, so the mount
# point is the very directory recorded (same device and inode), empty
mount -t tmpfs drive "$MP"
"$REWIND" status --json > "$OUT/back-empty.json"
umount "$MP"
"""


def in_mount_namespace(tmp_path: Path) -> list[str] | None:
    """A command prefix running a shell in a private mount namespace, or None (why printed)."""
    if shutil.which("unshare") is None:
        print("skipped: unshare (util-linux) not installed")
        return None
    probe = tmp_path / "probe"
    probe.mkdir()
    for prefix in (["unshare", "-m", "--propagation", "private"],
                   ["unshare", "-r", "-m", "--propagation", "private"]):
        tried = subprocess.run([*prefix, "mount", "-t", "tmpfs", "probe", str(probe)],
                               capture_output=True)
        if tried.returncode == 0:
            return prefix
    print("skipped: no private mount namespace with tmpfs here (needs root or user namespaces)")
    return None


def test_unmounted_drive_is_missing_not_deleted(home, tmp_path):
    prefix = in_mount_namespace(tmp_path)
    if prefix is None:
        pytest.skip("cannot mount a tmpfs in a private mount namespace here")
    mp, out = tmp_path / "media" / "drive", tmp_path / "out"
    mp.mkdir(parents=True)
    (mp.parent / "other-mountpoint").mkdir()  # the parent of the mount point is populated
    out.mkdir()
    env = {**isolated_git_env(), "HERMES_HOME": str(home), "MP": str(mp), "OUT": str(out),
           "REWIND": REWIND, "HOME": str(tmp_path)}
    proc = subprocess.run([*prefix, "sh", "-c", DRIVE], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    wd = str(mp / "proj")

    def row(name: str) -> dict:
        data = json.loads((out / name).read_text())
        return next(p for p in data["projects"] if p["workdir"] == wd)

    for name in ("unmounted.json", "other-volume.json", "back-empty.json"):
        assert row(name)["state"] == "missing", name
        assert row(name)["deleted_at"] is None and row(name)["checkpoints"] == 2
    report = json.loads((out / "prune-unmounted.json").read_text())
    assert (report["deleted_orphan"], report["quarantined"]) == (0, 0)
    layout = Layout(home / "checkpoints")
    assert "deleted_at" not in read_record(layout, project_hash(wd)).extra
    assert len(history(layout, Path(wd))) == 2


MOUNTED_PARENT = r"""
set -e
mount -t tmpfs drive "$MP"
mkdir "$MP/proj"
echo one > "$MP/proj/a.txt"
"$REWIND" checkpoint "$MP/proj" >/dev/null
rm -rf "$MP/proj"
"$REWIND" status --json > "$OUT/deleted.json"
echo other > "$MP/other.txt"
"$REWIND" status --json > "$OUT/deleted-not-empty.json"
umount "$MP"
"""


def test_project_deleted_from_a_mounted_volume_needs_more_evidence(home, tmp_path):
    """The parent is the very directory recorded (a live mount point), and empty now: as
    likely another volume reusing the device and inode as a deletion. Kept as missing,
    unlike Hermes, which takes an empty live mount point as evidence."""
    prefix = in_mount_namespace(tmp_path)
    if prefix is None:
        pytest.skip("cannot mount a tmpfs in a private mount namespace here")
    mp, out = tmp_path / "drive", tmp_path / "out"
    mp.mkdir()
    out.mkdir()
    env = {**isolated_git_env(), "HERMES_HOME": str(home), "MP": str(mp), "OUT": str(out),
           "REWIND": REWIND, "HOME": str(tmp_path)}
    proc = subprocess.run([*prefix, "sh", "-c", MOUNTED_PARENT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {name: next(p for p in json.loads((out / name).read_text())["projects"]
                       if p["workdir"] == str(mp / "proj"))
            for name in ("deleted.json", "deleted-not-empty.json")}
    assert rows["deleted.json"]["state"] == "missing"
    # with something else on the volume, the deletion is evident
    assert rows["deleted-not-empty.json"]["state"] == "deleted"
