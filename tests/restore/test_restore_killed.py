"""Every restore is undoable, even a killed one (issue 10).

A real `rewind restore` (or `undo`) process is stopped midway with a real SIGKILL
or SIGINT (paused after half of its files by the restore's test hook, so the signal
lands midway every time); `rewind undo` must then return the tree to that restore's pre-rollback
state (not the state before an earlier restore), keep a person's later edit, and
`rewind status` must name the unfinished restore.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pygit2
import pytest
from conftest import PAUSE_RESTORE, REWIND, rewind_env, signal_when_paused
from test_restore_helpers import checkpoint, picture, write

from rewindfs.store import project_hash

BULK = 500  # files each restore rewrites
MIDWAY = BULK // 2  # where the test hook pauses it


def bulk(version: str) -> dict[str, str]:
    return {f"bulk/f{i:04d}.txt": f"{version} {i}\n" for i in range(BULK)}


def stop_midway(args, cwd, env, sig=signal.SIGKILL):
    """Run `rewind ARGS`, paused after MIDWAY files, then `sig`: (returncode, stdout, stderr)."""
    proc = subprocess.Popen([REWIND, *args], cwd=cwd, env={**env, PAUSE_RESTORE: str(MIDWAY)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    paused, code, out, err = signal_when_paused(proc, sig)
    assert paused, f"the restore ended before its pause: {code} {out} {err}"
    return code, out, err


def journal_of(home, project):
    return home / "checkpoints/store/worktrees" / project_hash(project) / "restores.jsonl"


@pytest.fixture
def after_one_restore(mgr, project, run_rewind, home, tmp_path):
    """A finished restore, then a person's edits: (checkpoint, picture before the next)."""
    write(project, {"notes.txt": "one\n", "gone_later.txt": "x\n", **bulk("v1")})
    cp = checkpoint(mgr, project, "v1")
    write(project, {"notes.txt": "two\n", **bulk("v2")})
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    write(project, {"notes.txt": "three\n", "person.txt": "mine\n", **bulk("v3")})
    return cp, picture(project)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_undo_after_a_stopped_restore_returns_to_its_pre_rollback_state(
        sig, after_one_restore, project, home, tmp_path, run_rewind):
    cp, before = after_one_restore
    env = rewind_env(home, tmp_path / "user-home")
    code, out, err = stop_midway(["restore", cp[:8], "--yes"], project, env, sig)
    assert code == (-signal.SIGKILL if sig == signal.SIGKILL else 130), (code, out, err)
    if sig == signal.SIGINT:
        assert err.strip().splitlines()[-1] == "rewind: interrupted", err
        assert "Traceback" not in err
    midway = picture(project)
    assert midway != before, "the restore was stopped before it changed anything"
    assert (project / f"bulk/f{BULK - 1:04d}.txt").read_text() == f"v3 {BULK - 1}\n", \
        "the restore finished before the signal: nothing to test"
    status = run_rewind("status", cwd=project)
    assert status.returncode == 0, status.stderr
    assert f"Unfinished restore of {project}" in status.stdout, status.stdout
    assert f"rewind undo -C {project}" in status.stdout
    data = json.loads(run_rewind("status", "--json", cwd=project).stdout)
    assert [u["target"] for u in data["unfinished_restores"]] == [cp]

    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = picture(project)
    assert after == before, "undo did not return to the stopped restore's pre-rollback state"
    assert (project / "notes.txt").read_text() == "three\n"
    assert "Unfinished" not in run_rewind("status", cwd=project).stdout


def test_undo_after_a_killed_restore_keeps_a_later_edit(after_one_restore, project, home,
                                                        tmp_path, run_rewind):
    cp, before = after_one_restore
    env = rewind_env(home, tmp_path / "user-home")
    code, _, _ = stop_midway(["restore", cp[:8], "--yes"], project, env)
    assert code == -signal.SIGKILL
    last = project / f"bulk/f{BULK - 1:04d}.txt"
    assert last.read_text() == f"v3 {BULK - 1}\n", "the restore finished before the kill"
    # a person edits one file the restore had written and one it had not reached
    (project / "bulk/f0000.txt").write_text("person after the crash\n")
    last.write_text("person edit, untouched by the restore\n")
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kept your edits: bulk/f0000.txt" in proc.stdout, proc.stdout
    after = picture(project)
    assert after.pop(b"bulk/f0000.txt")[2] == b"person after the crash\n"
    untouched = after.pop(b"bulk/f%04d.txt" % (BULK - 1))
    assert untouched[2] == b"person edit, untouched by the restore\n"
    expected = dict(before)
    del expected[b"bulk/f0000.txt"], expected[b"bulk/f%04d.txt" % (BULK - 1)]
    assert after == expected


def test_undo_after_a_killed_undo(after_one_restore, project, home, tmp_path, run_rewind):
    """A killed undo is a restore like any other: `rewind undo` puts back the state it
    started from (the restored tree)."""
    cp, _ = after_one_restore
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    restored = picture(project)
    code, _, _ = stop_midway(["undo"], project, rewind_env(home, tmp_path / "user-home"))
    assert code == -signal.SIGKILL
    assert picture(project) != restored
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert picture(project) == restored


def test_leftover_temp_files_are_never_captured_and_are_removed(after_one_restore, project,
                                                                home, tmp_path, run_rewind,
                                                                mgr, store_dir):
    cp, before = after_one_restore
    code, _, _ = stop_midway(["restore", cp[:8], "--yes"], project,
                             rewind_env(home, tmp_path / "user-home"))
    assert code == -signal.SIGKILL
    # what a kill between writing a temp file and renaming it leaves (it happened in 3 of 35
    # killed restores; placed by hand here so the test does not depend on luck)
    leftovers = [project / "bulk/.f0500.txt.rewind-0123abcd.tmp",
                 project / ".notes.txt.rewind-89abcdef.tmp"]
    for path in leftovers:
        path.write_text("half written\n")
    taken = mgr.take(str(project), "after the crash")
    repo = pygit2.Repository(str(store_dir))
    names = [e.name for e in repo[taken.tree]] + [e.name for e in repo[taken.tree]["bulk"].peel(
        pygit2.Tree)]
    assert not [n for n in names if ".rewind-" in n], "a checkpoint captured a temp file"
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not any(p.exists() for p in leftovers), "undo left the temp files behind"
    assert picture(project) == before


def test_undo_when_a_created_file_was_deleted_since(mgr, project, run_rewind):
    write(project, {"a.txt": "a1\n", "made.txt": "made by the restore\n", "sub/b.txt": "b1\n"})
    cp = checkpoint(mgr, project, "with made.txt")
    (project / "made.txt").unlink()
    write(project, {"a.txt": "a2\n", "sub/b.txt": "b2\n"})
    before = picture(project)
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    (project / "made.txt").unlink()
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "already gone" in proc.stdout and "made.txt" in proc.stdout, proc.stdout
    assert picture(project) == before


def test_old_journal_entries_still_undo(mgr, project, run_rewind, home):
    """A journal written by the previous version (one line per finished restore) undoes."""
    write(project, {"a.txt": "a1\n"})
    cp = checkpoint(mgr, project, "a1")
    (project / "a.txt").write_text("a2\n")
    pre = checkpoint(mgr, project, "a2")
    (project / "a.txt").write_text("a1\n")  # as that restore left it
    path = journal_of(home, project)
    path.write_text(json.dumps({"target": cp, "pre_rollback": pre, "touched": ["a.txt"],
                                "kind": "restore", "time": time.time(),
                                "created_dirs": []}) + "\n")
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / "a.txt").read_text() == "a2\n"
