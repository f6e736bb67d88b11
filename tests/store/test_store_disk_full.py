"""A checkpoint that fills the store's disk (issue 33, case 12): on a real size-limited
tmpfs, filled until the kernel says ENOSPC, a first checkpoint of a project too big for
what is left fails with one line, leaves no temporary pack or index behind (of the
capturing process, nor of the two-core capture's child), the store is `git fsck` clean,
and the next checkpoint succeeds as soon as the space is back."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest
from conftest import isolated_git_env, small_tmpfs

MiB = 1 << 20


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 24 MiB tmpfs (root only), unmounted afterwards."""
    with small_tmpfs(tmp_path / "small-disk", "24m") as mnt:
        yield mnt


def fill(disk: Path, leave: int) -> Path:
    """Fill `disk` until the kernel refuses a write (ENOSPC, proved), then free `leave`
    bytes of it again; the filler file, to delete when the space is to come back."""
    filler = disk / "filler"
    chunk = b"\xa5" * MiB
    with open(filler, "wb", buffering=0) as fh:
        with pytest.raises(OSError) as full:
            while True:
                fh.write(chunk)
        assert full.value.errno == errno.ENOSPC
    os.truncate(filler, filler.stat().st_size - leave)
    return filler


def leftovers(store: Path) -> list[str]:
    objects = store / "objects"
    return sorted(str(p.relative_to(store)) for p in objects.rglob("*")
                  if p.name.startswith("tmp_") or p.name.endswith(".lock"))


def fsck(store: Path) -> None:
    proc = subprocess.run(["git", "fsck", "--strict"], env=isolated_git_env(GIT_DIR=str(store)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("files,size", [(1500, 8 << 10), (40, 300 << 10)],
                         ids=["split across two processes", "one process"])
def test_a_full_disk_leaves_nothing_behind(files: int, size: int, small_disk: Path,
                                           tmp_path: Path, run_rewind) -> None:
    home = small_disk / "hermes-home"
    env = {"HERMES_HOME": str(home)}
    project = tmp_path / "proj"
    project.mkdir()
    (project / "README.md").write_text("first\n")
    run_rewind("checkpoint", str(project), "-m", "small", env=env, check=True)
    store = home / "checkpoints" / "store"
    # Incompressible files, together more than the space left: 12 MiB into 4 MiB.
    for i in range(files):
        (project / f"f{i:04}.bin").write_bytes(os.urandom(size))
    filler = fill(small_disk, leave=4 * MiB)

    done = run_rewind("checkpoint", str(project), "-m", "too big", env=env)
    # The scenario: the disk really filled during this checkpoint.
    assert done.returncode != 0, done.stdout
    assert "No space left on device" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert leftovers(store) == []
    fsck(store)

    filler.unlink()   # the space is back
    run_rewind("checkpoint", str(project), "-m", "fits now", env=env, check=True)
    listed = run_rewind("list", "--json", cwd=project, env=env, check=True).stdout
    assert '"fits now"' in listed and '"small"' in listed and '"too big"' not in listed
    assert leftovers(store) == []
    fsck(store)
