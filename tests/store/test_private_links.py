"""Private files wall to wall: a symlink planted at a directory rewindfs owns (not only at
a file's own name) is never followed, under umask 000 too.

Each case plants one link where rewindfs writes (the mount log's directory, a store
directory, the ignore stamp, the writers lock) pointing at a place outside, runs a
real `rewind` command, and checks the outside place is untouched and what rewindfs
wrote instead is a private regular file.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from conftest import REWIND, force_unmount
from test_restore_helpers import one_line_error

from rewindfs.store import project_hash


def run(home: Path, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """`rewind ARGS` with HERMES_HOME=home, under umask 000."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    env["REWIND_NO_SERVER"] = "1"   # run in its own process (no resident one)
    env.update(HERMES_HOME=str(home), HOME=str(home.parent / "user-home"), LC_ALL="C.UTF-8")
    return subprocess.run([REWIND, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: os.umask(0o000))


def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir(exist_ok=True)
    return place


def test_a_symlinked_log_directory_is_refused(tmp_path, project):
    home = tmp_path / "home"
    assert run(home, "checkpoint", project).returncode == 0
    elsewhere = outside(tmp_path)
    (home / "logs").symlink_to(elsewhere)
    mnt = tmp_path / "mnt"
    try:
        proc = run(home, "mount", mnt)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "mount log" in one_line_error(proc)
        assert not os.path.ismount(mnt)
    finally:
        force_unmount(mnt)
    assert list(elsewhere.iterdir()) == [], "the mount log landed through a symlinked logs/"


def test_a_symlinked_store_directory_is_refused(tmp_path, project):
    """projects/ replaced by a link: the checkpoint fails with one line, nothing written
    through it."""
    home = tmp_path / "home"
    assert run(home, "checkpoint", project).returncode == 0
    store = home / "checkpoints" / "store"
    elsewhere = outside(tmp_path)
    os.rename(store / "projects", elsewhere / "moved")
    (store / "projects").symlink_to(elsewhere / "moved")
    before = sorted(p.name for p in (elsewhere / "moved").iterdir())
    (project / "README.md").write_text("edited\n")
    proc = run(home, "checkpoint", project)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "symlink" in one_line_error(proc)
    assert sorted(p.name for p in (elsewhere / "moved").iterdir()) == before


def test_the_ignore_stamp_is_private_and_never_followed(tmp_path, project):
    home = tmp_path / "home"
    assert run(home, "checkpoint", project).returncode == 0
    admin = home / "checkpoints" / "store" / "worktrees" / project_hash(project)
    stamp = admin / "ignore-stamp"
    assert stamp.exists(), "the first checkpoint wrote no stamp"
    target = outside(tmp_path) / "stamp-target"
    stamp.unlink()
    stamp.symlink_to(target)
    # a changed exclude file makes the next checkpoint write the stamp again
    exclude = home / "checkpoints" / "store" / "info" / "exclude"
    exclude.write_text(exclude.read_text() + "*.never\n")
    (project / "README.md").write_text("edited\n")
    proc = run(home, "checkpoint", project)
    assert proc.returncode == 0, proc.stderr
    assert not os.path.lexists(target), "the stamp was written through a planted symlink"
    st = os.lstat(stamp)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600


def test_the_writers_lock_is_never_followed(tmp_path, project):
    home = tmp_path / "home"
    assert run(home, "checkpoint", project).returncode == 0
    lock = home / "checkpoints" / "store" / "locks" / "writers.lock"
    target = outside(tmp_path) / "lock-target"
    lock.unlink()
    lock.symlink_to(target)
    (project / "README.md").write_text("edited\n")
    proc = run(home, "checkpoint", project)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "writers.lock" in one_line_error(proc)
    assert not os.path.lexists(target), "the writers lock was created through a symlink"
