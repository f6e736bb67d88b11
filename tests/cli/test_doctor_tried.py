"""`rewind doctor` tries what a checkpoint does instead of guessing (issue 47): its store
verdict comes from writing, renaming and locking where a checkpoint does and from the free
bytes and inodes, so a store checkpoints cannot write fails and one they can use passes
whatever its top folder's mode; its fixes are the right ones. Each scenario is proven first
(the checkpoint fails, or works). An agent's line saying its hook's last run failed:
tests/hooks/test_hooks_records.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import rewind_env, small_tmpfs


def checks(done: subprocess.CompletedProcess) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


@pytest.fixture
def nobodys(as_nobody) -> Iterator[tuple[list[str], Path]]:
    """(the prefix that runs a command as nobody, a folder of nobody's that nobody can
    reach: a HERMES_HOME `hermes` and a project `proj` in it)."""
    top = Path(tempfile.mkdtemp(prefix="rewind-nobody-", dir="/tmp"))
    os.chmod(top, 0o755)
    (top / "proj").mkdir()
    (top / "proj" / "a.txt").write_text("one\n")
    (top / "hermes").mkdir()
    for path in (top, top / "proj", top / "proj" / "a.txt", top / "hermes"):
        os.chown(path, 65534, 65534)
    try:
        yield as_nobody, top
    finally:
        for dirpath, dirnames, _files in os.walk(top):
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(top, ignore_errors=True)


def as_user(prefix: list[str], top: Path, *args: str) -> subprocess.CompletedProcess:
    # The interpreter itself (the console script's `env` could not reach it as nobody)
    return subprocess.run([*prefix, sys.executable, "-m", "rewindfs.cli", *args],
                          capture_output=True, text=True,
                          timeout=120, cwd=top / "proj",
                          env=rewind_env(top / "hermes", top, TERM="dumb"))


def test_a_store_checkpoints_cannot_write_fails(nobodys) -> None:
    prefix, top = nobodys
    assert as_user(prefix, top, "checkpoint").returncode == 0
    store = top / "hermes" / "checkpoints" / "store"
    subprocess.run([*prefix, "chmod", "-R", "a-w", str(store / "objects"), str(store / "refs")],
                   check=True)
    (top / "proj" / "a.txt").write_text("two\n")
    failed = as_user(prefix, top, "checkpoint")
    assert failed.returncode != 0 and "Permission denied" in failed.stderr, failed.stderr
    done = as_user(prefix, top, "doctor", "--json")
    assert done.returncode == 1, done.stdout
    row = checks(done)["store"]
    assert row["status"] == "fail" and "Permission denied" in row["detail"], row
    assert row["fix"].startswith("chmod -R u+w ") and str(store) in row["fix"], row


def test_a_store_in_a_folder_of_mode_555_that_checkpoints_use_passes(nobodys) -> None:
    prefix, top = nobodys
    assert as_user(prefix, top, "checkpoint").returncode == 0
    base = top / "hermes" / "checkpoints"
    subprocess.run([*prefix, "chmod", "555", str(base)], check=True)
    (top / "proj" / "a.txt").write_text("two\n")
    assert as_user(prefix, top, "checkpoint").returncode == 0   # checkpoints work
    done = as_user(prefix, top, "doctor", "--json")
    assert checks(done)["store"]["status"] == "ok", checks(done)["store"]
    assert done.returncode == 0, done.stdout


def test_a_filesystem_out_of_inodes_fails(tmp_path: Path, run_rewind) -> None:
    # A tmpfs of plenty of bytes and few inodes: the store, then files until none is left.
    with small_tmpfs(tmp_path / "mnt", "512m", "nr_inodes=400") as mnt:
        home, proj = mnt / "hermes", mnt / "proj"
        proj.mkdir()
        (proj / "a.txt").write_text("one\n")
        env = {"HERMES_HOME": str(home)}
        run_rewind("checkpoint", cwd=proj, env=env, check=True)
        filler = mnt / "filler"
        filler.mkdir()
        for i in range(10_000):
            try:
                (filler / str(i)).touch()
            except OSError:
                break
        else:
            pytest.fail("the tmpfs did not run out of inodes")
        (proj / "a.txt").write_text("changed\n")
        failed = run_rewind("checkpoint", cwd=proj, env=env)
        assert failed.returncode != 0 and "No space left" in failed.stderr, failed.stderr
        done = run_rewind("doctor", "--json", env=env)
        row = checks(done)["store"]
        assert done.returncode == 1 and row["status"] == "fail", row
        assert "inode" in row["detail"], row


def test_fusermount3_off_the_path_is_not_a_missing_package(run_rewind, tmp_path) -> None:
    found = next((d for d in ("/usr/bin", "/bin", "/usr/local/bin")
                  if os.access(os.path.join(d, "fusermount3"), os.X_OK)), None)
    if found is None:
        print("SKIPPED: no fusermount3 installed in a standard folder")
        pytest.skip("no fusermount3 installed in a standard folder")
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("env", "sh"):
        (bare / tool).symlink_to(shutil.which(tool))
    done = run_rewind("doctor", "--json", env={"PATH": str(bare)})
    row = checks(done)["fuse"]
    assert "apt-get" not in (row["fix"] or ""), row
    assert found in row["fix"] and "PATH" in row["fix"], row
