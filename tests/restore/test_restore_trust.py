"""Trust, third pass (issue 41), through the real `rewind` on real stores: undo reaches
back past restores that changed nothing, a confirmed restore goes to the checkpoint it
showed, a revert taken back by `rewind undo` can be made again, and a plan never
promises to create a file where a directory of ignored files stands."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import REWIND
from test_restore_helpers import picture

from rewindfs.store import Store, take


@pytest.fixture
def rw(run_rewind, project):
    """`rewind ARGS` in the project; check=True unless told otherwise."""
    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run_rewind(*args, cwd=project, check=check)

    return run


def undo_list(rw) -> list[dict]:
    return json.loads(rw("undo", "--list", "--json").stdout)


# -- case 1: undo walks back past restores that changed nothing -----------------------------


def test_undo_walks_back_past_a_restore_that_changed_nothing(rw, project: Path):
    (project / "a").write_text("a\n")
    rw("checkpoint", "-m", "one")
    (project / "b").write_text("important\n")
    first = rw("restore", "1", "--yes")
    assert "0 file(s) written, 1 deleted" in first.stdout and not (project / "b").exists()
    again = rw("restore", "1", "--yes")  # the files already match: a restore of nothing
    assert "0 file(s) written, 0 deleted" in again.stdout, again.stdout
    listed = undo_list(rw)
    assert [e["files"] for e in listed] == [1], listed  # the no-op is no step to undo
    planned = rw("undo", "--dry-run")
    assert "create 1: b" in planned.stdout, planned.stdout
    rw("undo")
    assert (project / "b").read_text() == "important\n"


def test_undo_steps_count_only_restores_that_changed_files(rw, project: Path):
    rw("checkpoint", "-m", "one")
    (project / "b").write_text("b\n")
    rw("restore", "1", "--yes")  # deletes b
    rw("restore", "1", "--yes")  # nothing
    (project / "c").write_text("c\n")
    rw("restore", "1", "--yes")  # deletes c
    rw("restore", "1", "--yes")  # nothing
    assert not (project / "b").exists() and not (project / "c").exists()
    rw("undo", "--steps", "2")
    assert (project / "b").read_text() == "b\n" and (project / "c").read_text() == "c\n"


# -- case 3: the checkpoint a person confirmed is the one restored --------------------------


def test_a_confirmed_restore_goes_to_the_checkpoint_it_showed(child_env, project: Path,
                                                              store: Store):
    """`rewind restore 1` asks (it deletes a file); meanwhile another process takes a
    checkpoint, so "1" now names that one: `y` restores the checkpoint the question
    named, not whatever "1" names by then."""
    from terminal import PtyProcess

    shown = take(store, project, "the one shown").commit
    (project / "extra.txt").write_text("made after it\n")
    proc = PtyProcess([REWIND, "restore", "1", "-C", str(project)],
                      env=child_env(TERM="xterm"))
    proc.expect(r"delete 1 file\(s\) and restore\? \[y/N\]")
    assert f"restoring to {shown[:8]} (checkpoint 1: the one shown)".encode() in proc.plain
    newer = take(store, project, "taken while the question waited")
    assert newer.taken and newer.commit != shown  # "1" names this one now
    proc.send("y\n")
    assert proc.wait() == 0, proc.plain
    assert not (project / "extra.txt").exists(), proc.plain
    assert f"to {shown[:8]}".encode() in proc.plain


# -- case 7: a revert taken back by `rewind undo` can be made again -------------------------


def test_revert_again_after_undoing_a_revert(rw, project: Path, mgr):
    mgr.begin_step(str(project), "s1", "turn-1")
    mgr.end_step(str(project), "s1")
    mgr.begin_step(str(project), "s2", "turn-2")
    (project / "README.md").write_text("changed in turn 2\n")
    mgr.end_step(str(project), "s2")
    rw("revert", "turn-2")
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"
    rw("undo")
    assert (project / "README.md").read_text() == "changed in turn 2\n"
    again = rw("revert", "turn-2", check=False)
    assert again.returncode == 0, again.stderr
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"
    rw("redo")  # the second revert taken back the way a revert is
    assert (project / "README.md").read_text() == "changed in turn 2\n"


# -- case 7: a directory of ignored files where the checkpoint has a file -------------------


@pytest.fixture
def dir_of_ignored(rw, project: Path) -> Path:
    """Checkpoint 1 holds a file `x`; now `x/` is a directory holding only an ignored file
    (and `y`, deleted, is a plain file to put back)."""
    (project / ".gitignore").write_text("*.log\n")
    (project / "x").write_text("the file x\n")
    (project / "y").write_text("y\n")
    rw("checkpoint", "-m", "x is a file")
    (project / "x").unlink()
    (project / "x").mkdir()
    (project / "x" / "build.log").write_text("ignored, in no checkpoint\n")
    (project / "y").unlink()
    return project


def test_the_plan_says_a_directory_of_ignored_files_stays(rw, dir_of_ignored: Path):
    """The plan keeps `x/` (its ignored files are in no checkpoint) and says so; the
    restore does what it planned, puts `y` back and does not fail."""
    project = dir_of_ignored
    planned = rw("restore", "1", "--dry-run")
    assert "create 1: y" in planned.stdout, planned.stdout
    assert "create 2" not in planned.stdout
    kept = [line for line in planned.stdout.splitlines() if "in the way" in line]
    assert kept and kept[0].rstrip().endswith(": x"), planned.stdout
    done = rw("restore", "1", "--yes", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAILED" not in done.stdout
    assert (project / "x" / "build.log").read_text() == "ignored, in no checkpoint\n"
    assert (project / "y").read_text() == "y\n"
    assert [line for line in done.stdout.splitlines() if "in the way" in line] == kept


def test_a_file_ignored_where_the_checkpoint_has_a_directory(run_rewind, rw, project: Path):
    """The mirror case: checkpoint 1 has `z/f`; now `z` is a file the settings exclude.
    The plan keeps it and says so; the restore does not fail on it."""
    (project / "z").mkdir()
    (project / "z" / "f").write_text("in z\n")
    rw("checkpoint", "-m", "z is a directory")
    (project / "z" / "f").unlink()
    (project / "z").rmdir()
    (project / "z").write_text("an excluded file\n")
    excluded = {"REWIND_EXTRA_EXCLUDES": "z"}
    planned = run_rewind("restore", "1", "--dry-run", cwd=project, env=excluded, check=True)
    assert "create 1: z/f" not in planned.stdout, planned.stdout
    assert any(line.rstrip().endswith(": z/f") and "in the way" in line
               for line in planned.stdout.splitlines()), planned.stdout
    done = run_rewind("restore", "1", "--yes", cwd=project, env=excluded)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "z").read_text() == "an excluded file\n"


def test_a_directory_emptied_by_the_restore_is_replaced_by_the_file(rw, project: Path):
    """What must keep working: `x/` holding only files the restore deletes (captured ones)
    makes way for the file `x`."""
    (project / "x").write_text("the file x\n")
    rw("checkpoint", "-m", "x is a file")
    (project / "x").unlink()
    (project / "x").mkdir()
    (project / "x" / "tracked.txt").write_text("captured, deleted by the restore\n")
    planned = rw("restore", "1", "--dry-run")
    assert "create 1: x" in planned.stdout and "delete 1: x/tracked.txt" in planned.stdout
    rw("restore", "1", "--yes")
    assert (project / "x").read_text() == "the file x\n"
    assert "x" in {p.decode() for p in picture(project)}


# -- case 2: max_files counts files, not index entries plus files ---------------------------


@pytest.fixture
def few(run_rewind, project: Path):
    """`rewind ARGS` in the project with max_files 100 (check=True unless told)."""
    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run_rewind(*args, cwd=project, env={"REWIND_MAX_FILES": "100"}, check=check)

    return run


def fill(root: Path, folder: str, count: int, text: str = "") -> None:
    (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / folder / f"f{i}.txt").write_text(f"{text}{i}\n")


def test_moving_a_folder_is_not_counted_twice(few, project: Path):
    """60 files, 50 of them moved by `mv src lib`: still 60 files, under max_files 100."""
    fill(project, "src", 50)
    fill(project, "other", 5)
    few("checkpoint", "-m", "src")
    assert len(list(project.rglob("*.*"))) <= 60
    (project / "src").rename(project / "lib")
    for args in (["diff", "--stat"], ["restore", "1", "--dry-run"], ["checkpoint", "-m", "lib"]):
        done = few(*args, check=False)
        assert done.returncode == 0, (args, done.stderr)
    few("restore", "2", "--yes")  # src back: lib's 50 deleted, src's 50 created
    assert (project / "src" / "f0.txt").exists() and not (project / "lib").exists()
    few("checkpoint", "-m", "src again")
    few("undo")
    assert (project / "lib" / "f0.txt").exists() and not (project / "src").exists()


def test_after_a_restore_of_other_files_checkpoints_and_undo_still_work(few, project: Path):
    """60 files, then 60 others in their place: each tree is 60 files, every capture of
    either is within max_files 100, whatever the index held before."""
    fill(project, "a", 60)
    few("checkpoint", "-m", "a")
    for path in sorted((project / "a").iterdir()):
        path.unlink()
    fill(project, "b", 60)
    few("checkpoint", "-m", "b")
    few("restore", "2", "--yes")
    assert len(list((project / "a").iterdir())) == 60 and not (project / "b").exists()
    (project / "a" / "f0.txt").write_text("edited\n")
    few("checkpoint", "-m", "a edited")
    few("undo")
    assert len(list((project / "b").iterdir())) == 60


def test_an_ignore_rule_added_brings_a_project_under_max_files(few, project: Path):
    """Over the limit, the error says to add ignore rules: once they are added, the
    files they ignore no longer count, although the index still held them."""
    fill(project, "generated", 40)
    fill(project, "lib", 40)
    few("checkpoint", "-m", "with generated")
    fill(project, "more", 30)
    refused = few("checkpoint", "-m", "too many", check=False)
    assert refused.returncode == 1 and "max_files" in refused.stderr, refused.stderr
    (project / ".gitignore").write_text("generated/\n")
    done = few("checkpoint", "-m", "generated ignored", check=False)
    assert done.returncode == 0, done.stderr
    assert few("cat", "2", "generated/f0.txt").stdout == "0\n"
    gone = few("cat", "1", "generated/f0.txt", check=False)
    assert gone.returncode != 0, gone.stdout  # no longer in the newest checkpoint


# -- case 7: a lock waited for too long says what is locked, by what, and what to do --------


def test_a_lock_timeout_names_the_project_its_holder_and_what_to_do(child_env, project: Path,
                                                                    store: Store):
    """A real `rewind restore`, paused midway, holds the project; a caller that may wait
    only briefly (as an MCP tool call does) is told which project, held by which process
    doing what, and what to do, instead of `<16 hex>.lock is locked`."""
    import signal

    from conftest import PAUSE_RESTORE

    from rewindfs.errors import Busy
    from rewindfs.store.objects import locks

    take(store, project, "one")
    (project / "a.txt").write_text("a\n")
    (project / "b.txt").write_text("b\n")
    proc = subprocess.Popen([REWIND, "restore", "1", "-y"], cwd=project,
                            env={**child_env(), PAUSE_RESTORE: "1"}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said = b""
        while b"rewind: test pause" not in said:  # paused, holding the project
            chunk = os.read(proc.stderr.fileno(), 4096)
            assert chunk, f"the restore ended before its pause: {said!r}"
            said += chunk
        with locks.waiting_at_most(0.2), pytest.raises(Busy) as refused:
            take(store, project, "while the restore runs")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    message = str(refused.value)
    assert str(project) in message, message
    assert f"process {proc.pid} (rewind restore)" in message, message
    assert "try again" in message and ".lock" not in message, message
