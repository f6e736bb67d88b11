"""What rewindfs creates is private whatever the umask, and never written through a planted
symlink (issue 11).

HERMES_HOME (when rewindfs creates it), checkpoints/, the store, logs/ and every
directory of its own are 0700; the files it writes itself (journals, ledgers, step
logs, actions, project records, locks, the mount log, markers) 0600, under umask 000
too. A symlink planted at a gc placeholder, at the mount log or at a journal makes
rewindfs refuse or replace it, never create or append to what it points at. As user
`nobody` (via su, where available), nothing under a Hermes home can be read or planted.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REWIND, force_unmount, rewind_env
from test_restore_helpers import one_line_error, picture, write

from rewindfs.store import project_hash


def run(home: Path, umask: int, *args: str, cwd=None, timeout: float = 120
        ) -> subprocess.CompletedProcess:
    """The `rewind` CLI with HERMES_HOME=home, run under `umask`."""
    env = rewind_env(home, home.parent / "user-home")
    return subprocess.run([REWIND, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: os.umask(umask))


API = """
import sys
from rewindfs import CheckpointManager
m = CheckpointManager(enabled=True)
wd = sys.argv[1]
m.record_agent_write(wd, "README.md")
m.record_action(wd, "github.pr.opened", "1", "Open PR", reversible=False)
m.begin_step(wd, "s1", "t1")
open(wd + "/README.md", "a").write("agent\\n")
m.end_step(wd, "s1")
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def exercise(home: Path, project: Path, umask: int) -> None:
    """Create everything rewindfs writes: store, records, journal, ledger, steps,
    actions, locks, markers, the mount log."""
    assert run(home, umask, "checkpoint", project, "-m", "one").returncode == 0
    (project / "README.md").write_text("edited\n")
    proc = run(home, umask, "restore", "1", "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert run(home, umask, "undo", cwd=project).returncode == 0
    env = rewind_env(home, home.parent / "user-home")
    proc = subprocess.run([sys.executable, "-c", API, str(project)], env=env, text=True,
                          capture_output=True, preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr
    proc = run(home, umask, "prune", "-f")
    assert proc.returncode == 0, proc.stderr
    mnt = home.parent / "mnt"
    try:
        proc = run(home, umask, "mount", mnt)
        assert proc.returncode == 0, proc.stderr
    finally:
        force_unmount(mnt)


def own_files(home: Path) -> list[Path]:
    store = home / "checkpoints" / "store"
    h16 = next((store / "worktrees").iterdir()).name
    admin = store / "worktrees" / h16
    return [home / "logs" / "rewind-mount.log", store / "info" / "exclude",
            store / "projects" / f"{h16}.json", store / "locks" / f"{h16}.lock",
            admin / "restores.jsonl", admin / "HEAD", admin / "gitdir", admin / "exclude",
            store / "ledger" / f"{h16}.jsonl", store / "steps" / f"{h16}.jsonl",
            home / "checkpoints" / ".last_prune", *(store / "locks").iterdir()]


def own_dirs(home: Path) -> list[Path]:
    store = home / "checkpoints" / "store"
    return [home, home / "logs", home / "checkpoints", store, store / "locks",
            store / "projects", store / "worktrees", *(store / "worktrees").iterdir(),
            store / "ledger", store / "steps", store / "actions"]


def test_everything_private_under_umask_000(tmp_path, project):
    home = tmp_path / "new-home"  # created by rewindfs
    exercise(home, project, 0o000)
    for path in own_dirs(home):
        assert mode(path) == 0o700, f"{path}: {oct(mode(path))}"
    for path in own_files(home):
        assert stat.S_ISREG(os.lstat(path).st_mode) and mode(path) & 0o077 == 0, \
            f"{path}: {oct(mode(path))}"


def test_gc_placeholder_symlink_is_never_followed(tmp_path, project):
    home = tmp_path / "home"
    assert run(home, 0o022, "checkpoint", project).returncode == 0
    target = tmp_path / "outside" / "created-by-gc"
    target.parent.mkdir()
    fanout = home / "checkpoints" / "store" / "objects" / "00"
    fanout.mkdir(exist_ok=True)
    (fanout / ".rewindfs-gc").symlink_to(target)
    proc = run(home, 0o022, "prune", "-f")
    assert proc.returncode == 0, proc.stderr
    assert not os.path.lexists(target), "gc created a file through a planted symlink"
    assert not os.path.lexists(fanout / ".rewindfs-gc")


def test_mount_log_symlink_is_refused(tmp_path, project):
    home = tmp_path / "home"
    assert run(home, 0o022, "checkpoint", project).returncode == 0
    target = tmp_path / "outside" / "appended-by-mount"
    target.parent.mkdir()
    (home / "logs").mkdir(mode=0o700)
    (home / "logs" / "rewind-mount.log").symlink_to(target)
    mnt = tmp_path / "mnt"
    try:
        proc = run(home, 0o022, "mount", mnt)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "mount log" in one_line_error(proc)
        assert not os.path.ismount(mnt)
    finally:
        force_unmount(mnt)
    assert not os.path.lexists(target), "the mount wrote through a planted symlink"


def test_journal_symlink_is_refused_before_any_change(tmp_path, project):
    home = tmp_path / "home"
    assert run(home, 0o022, "checkpoint", project).returncode == 0
    target = tmp_path / "outside" / "journal-target"
    target.parent.mkdir()
    admin = home / "checkpoints" / "store" / "worktrees" / project_hash(project)
    (admin / "restores.jsonl").symlink_to(target)
    write(project, {"README.md": "edited\n"})
    before = picture(project)
    proc = run(home, 0o022, "restore", "1", "--yes", cwd=project)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    one_line_error(proc)
    assert picture(project) == before
    assert not os.path.lexists(target)


def nobody(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["su", "nobody", "-s", "/bin/sh", "-c", command],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def world(project):
    """A world-traversable directory in /tmp (pytest's tmp dirs are root-only), holding a
    copy of the sample project; removed afterwards."""
    if os.geteuid() != 0:
        print("SKIPPED: switching to user nobody needs root")
        pytest.skip("switching to user nobody needs root")
    if shutil.which("su") is None or nobody("id -u").stdout.strip() != "65534":
        print("SKIPPED: `su nobody` is not available here")
        pytest.skip("`su nobody` is not available here")
    base = Path(tempfile.mkdtemp(prefix="rewind-world-", dir="/tmp"))
    base.chmod(0o755)
    shutil.copytree(project, base / "proj")
    try:
        yield base
    finally:
        force_unmount(base / "mnt")
        shutil.rmtree(base)


def test_nobody_can_neither_read_nor_plant(world):
    home = world / "hermes-home"
    exercise(home, world / "proj", 0o000)
    log = home / "logs" / "rewind-mount.log"
    for command in (f"ls {home}", f"cat {log}", f"ls {home}/checkpoints/store",
                    f"ln -sf {world}/target {log}", f"touch {home}/logs/x"):
        proc = nobody(command)
        assert proc.returncode != 0, f"nobody could: {command}"
    assert not os.path.lexists(world / "target")


def test_an_old_world_writable_log_dir_cannot_redirect_the_log(world):
    """As an older version left it: HERMES_HOME 0755, logs/ 0777. `nobody` replaces the log
    with a symlink; root's `rewind mount` refuses instead of appending to the target."""
    home = world / "hermes-home"
    (home / "logs").mkdir(parents=True)
    home.chmod(0o755)
    (home / "logs").chmod(0o777)
    log = home / "logs" / "rewind-mount.log"
    assert run(home, 0o022, "checkpoint", world / "proj").returncode == 0
    proc = nobody(f"ln -sf {world}/target {log}")
    assert proc.returncode == 0, proc.stderr
    proc = run(home, 0o022, "mount", world / "mnt")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mount log" in one_line_error(proc)
    assert not os.path.lexists(world / "target")
