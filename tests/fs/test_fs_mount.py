"""The mount, for real: layout, bytes, modes, EROFS, xattrs, live refresh, `diff -r`
against a plain checkout, unmount on SIGTERM, stale mounts, and reading while git gc runs.

Skipped (with the reason) only where a FUSE filesystem cannot be mounted at all.
No timing assertions: waits poll with generous deadlines.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import threading
import time
from pathlib import Path

import pygit2
import pytest
from conftest import DEADLINE, REWIND, force_unmount, isolated_git_env, wait_for  # noqa: F401 - older imports

from rewindfs.fs.locate import mounted_checkpoints
from rewindfs.store import project_hash, set_label, take
from rewindfs.store.history.prune import enforce_max_snapshots

MiB = 1024 * 1024


def commit_time(store_dir: Path, commit: str) -> int:
    return pygit2.Repository(str(store_dir))[commit].author.time


def tree_on_disk(root: Path) -> dict[str, tuple[int, bytes]]:
    """path -> (st_mode, content or link target) of every non-directory under root."""
    out: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            body = os.fsencode(os.readlink(full)) if stat.S_ISLNK(st.st_mode) \
                else Path(full).read_bytes()
            out[os.path.relpath(full, root)] = (st.st_mode, body)
    return out


def sample(project: Path) -> None:
    (project / "bin").mkdir()
    (project / "bin" / "run").write_bytes(b"#!/bin/sh\nexit 0\n")
    (project / "bin" / "run").chmod(0o755)
    (project / "readme-link").symlink_to("README.md")
    (project / "empty").write_bytes(b"")
    (project / "blob.bin").write_bytes(os.urandom(300_000))


# -- layout, bytes and metadata ------------------------------------------------------------


def test_layout_matches_rewind_list(store, project, mount, run_rewind):
    for i in range(3):
        (project / "README.md").write_text(f"v{i}\n")
        take(store, project, f"edit {i}")
    mnt = mount()
    assert os.listdir(mnt) == ["proj"]
    listed = json.loads(run_rewind("list", str(project), "--json", check=True).stdout)
    entries = set(os.listdir(mnt / "proj"))
    assert {"1", "2", "3", "latest"} <= entries and len(entries) == 7
    for cp in listed:
        number = mnt / "proj" / str(cp["number"])
        assert os.path.islink(number)
        assert os.getxattr(number, "user.rewind.hash").decode() == cp["hash"]
        assert (number / "README.md").read_text() == f"v{3 - cp['number']}\n"
    assert os.readlink(mnt / "proj" / "latest") == os.readlink(mnt / "proj" / "1")
    stable = os.readlink(mnt / "proj" / "1")
    assert ":" not in stable and stable in entries


def test_files_equal_the_store(store, project, mount, files_of, store_dir):
    sample(project)
    commit = take(store, project, "sample").commit
    mnt = mount()
    shown = tree_on_disk(mnt / "proj" / "1")
    stored = files_of(commit)
    assert set(shown) == {p.decode() for p in stored}
    for path, (mode, content) in stored.items():
        st_mode, body = shown[path.decode()]
        assert body == content, path
        if mode == pygit2.enums.FileMode.LINK:
            assert stat.S_ISLNK(st_mode)
        else:
            want = 0o755 if mode == pygit2.enums.FileMode.BLOB_EXECUTABLE else 0o644
            assert stat.S_ISREG(st_mode) and stat.S_IMODE(st_mode) == want, path
            assert os.stat(mnt / "proj" / "1" / path.decode()).st_size == len(content)
    checkpoint = os.stat(mnt / "proj" / "1")
    assert checkpoint.st_mtime == commit_time(store_dir, commit)


def test_xattrs_on_checkpoint_dirs(store, project, mount):
    commit = take(store, project, "before patch").commit
    set_label(store, project_hash(project), "known-good", commit)
    mnt = mount()
    cp = mnt / "proj" / "latest"
    assert set(os.listxattr(cp)) >= {"user.rewind.reason", "user.rewind.time",
                                     "user.rewind.hash", "user.rewind.label"}
    assert os.getxattr(cp, "user.rewind.reason") == b"before patch"
    assert os.getxattr(cp, "user.rewind.hash") == commit.encode()
    assert os.getxattr(cp, "user.rewind.label") == b"known-good"
    with pytest.raises(OSError) as missing:
        os.getxattr(cp, "user.rewind.nothing")
    assert missing.value.errno == errno.ENODATA


def test_everything_is_read_only(store, project, mount):
    take(store, project, "first")
    mnt = mount()
    cp = mnt / "proj" / "1"
    attempts = {
        "write": lambda: open(cp / "README.md", "w"),
        "append": lambda: open(cp / "README.md", "a"),
        "create": lambda: open(cp / "new.txt", "x"),
        "unlink": lambda: os.unlink(cp / "README.md"),
        "rename": lambda: os.rename(cp / "README.md", cp / "moved.md"),
        "mkdir": lambda: os.mkdir(cp / "newdir"),
        "rmdir": lambda: os.rmdir(cp / "docs"),
        "chmod": lambda: os.chmod(cp / "README.md", 0o600),
        "truncate": lambda: os.truncate(cp / "README.md", 0),
        "symlink": lambda: os.symlink("x", cp / "l"),
        "setxattr": lambda: os.setxattr(cp, "user.x", b"1"),
        "project dir": lambda: os.mkdir(mnt / "proj" / "99"),
        "root": lambda: os.mkdir(mnt / "other"),
    }
    for what, attempt in attempts.items():
        with pytest.raises(OSError) as refused:
            attempt()
        assert refused.value.errno == errno.EROFS, what


def test_big_directory_lists_completely(store, project, mount):
    many = project / "many"
    many.mkdir()
    for i in range(3000):
        (many / f"file-with-a-longish-name-{i:05}.txt").write_text(str(i))
    take(store, project, "many")
    mnt = mount()
    assert sorted(os.listdir(mnt / "proj" / "1" / "many")) == sorted(os.listdir(many))


def test_shared_inodes_and_diff_between_checkpoints(store, project, mount):
    take(store, project, "first")
    (project / "README.md").write_text("changed\n")
    take(store, project, "second")
    mnt = mount()
    old, new = mnt / "proj" / "2", mnt / "proj" / "1"
    assert os.stat(old / "docs/guide.txt").st_ino == os.stat(new / "docs/guide.txt").st_ino
    assert os.stat(old / "README.md").st_ino != os.stat(new / "README.md").st_ino
    proc = subprocess.run(["diff", "-r", f"{old}/", f"{new}/"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "README.md" in proc.stdout and "guide.txt" not in proc.stdout


def test_diff_against_git_archive_is_empty(store, project, mount, store_dir, tmp_path):
    sample(project)
    commit = take(store, project, "sample").commit
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    archive = subprocess.run(["git", "archive", "--format=tar", commit], capture_output=True,
                             env=isolated_git_env(GIT_DIR=str(store_dir)), check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive, check=True)
    mnt = mount()
    proc = subprocess.run(["diff", "-r", "--no-dereference", f"{mnt}/proj/1/", f"{checkout}/"],
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", f"{mnt}/proj/1/", str(copy)], check=True)
    proc = subprocess.run(["diff", "-r", "--no-dereference", str(copy), str(checkout)],
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "")


# -- live ------------------------------------------------------------------------------------


def test_locating_checkpoints_in_a_mount(store, project, mount, tmp_path):
    commits = [take(store, project, "first").commit]
    (project / "README.md").write_text("new\n")
    commits.append(take(store, project, "second").commit)
    assert mounted_checkpoints(tmp_path / "mnt", project) == {}
    mnt = mount()
    found = mounted_checkpoints(mnt, project)
    assert set(found) == set(commits)
    assert (found[commits[1]] / "README.md").read_text() == "new\n"


def test_new_and_pruned_checkpoints_show_without_remount(store, project, mount, store_git):
    first = take(store, project, "first").commit
    mnt = mount()
    assert not (mnt / "proj" / "2").exists()
    (project / "README.md").write_text("second\n")
    second = take(store, project, "second").commit
    wait_for(lambda: os.path.lexists(mnt / "proj" / "2"), "checkpoint 2 to appear")
    wait_for(lambda: (mnt / "proj/1/README.md").read_text() == "second\n", "1 to renumber")
    store_git("update-ref", f"refs/hermes/{project_hash(project)}", first, second)
    wait_for(lambda: not os.path.lexists(mnt / "proj" / "2"), "checkpoint 2 to go")
    other = project.parent / "other"
    other.mkdir()
    (other / "f").write_text("f\n")
    take(store, other, "first")
    wait_for(lambda: (mnt / "other" / "latest" / "f").exists(), "a new project to appear")


def test_shell_inside_a_checkpoint_does_not_drift(store, project, mount):
    take(store, project, "first")
    mnt = mount()
    fd = os.open(mnt / "proj" / "1", os.O_RDONLY | os.O_DIRECTORY)
    try:
        (project / "README.md").write_text("newer\n")
        take(store, project, "second")
        wait_for(lambda: os.path.lexists(mnt / "proj" / "2"), "checkpoint 2")
        inside = os.open("README.md", os.O_RDONLY, dir_fd=fd)
        with os.fdopen(inside, "rb") as fh:
            assert fh.read() == b"# sample\n\nA sample project.\n"
    finally:
        os.close(fd)


@pytest.mark.long
def test_reads_stay_correct_while_pruning_and_gc_run(store, project, mount, store_dir,
                                                     files_of):
    sample(project)
    take(store, project, "first")
    mnt = mount()
    stop = threading.Event()
    # `gc --prune=now` deletes objects a concurrent writer has not referenced yet (git
    # documents it as unsafe with writers), so checkpoints are taken between gc runs;
    # the reads through the mount overlap them.
    writing = threading.Lock()
    completed: list[int] = []

    def gc_loop() -> None:
        env = isolated_git_env(GIT_DIR=str(store_dir))
        while not stop.is_set():
            with writing:
                proc = subprocess.run(["git", "gc", "--prune=now", "--quiet"], env=env,
                                      capture_output=True, text=True)
            completed.append(proc.returncode == 0)
            time.sleep(0.01)

    gc = threading.Thread(target=gc_loop)
    gc.start()
    try:
        for round_ in range(6):
            (project / f"round{round_}.txt").write_bytes(os.urandom(50_000))
            (project / f"big{round_}.bin").write_bytes(os.urandom(300_000))  # via git cat-file
            with writing:
                commit = take(store, project, f"round {round_}").commit
                enforce_max_snapshots(store.repo, store.layout, project_hash(project), 2)
                expected = files_of(commit)
            wait_for(lambda c=commit: os.getxattr(mnt / "proj" / "1", "user.rewind.hash")
                     == c.encode(), "the new checkpoint")
            for path, (_, content) in expected.items():
                target = mnt / "proj" / "1" / path.decode()
                if target.is_symlink():
                    continue
                with open(target, "rb") as fh:  # drop cached pages: read through FUSE
                    os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                    assert fh.read() == content, path
        wait_for(lambda: not os.path.lexists(mnt / "proj" / "3"), "pruned checkpoints to go")
    finally:
        stop.set()
        gc.join()
    assert any(completed), "git gc never completed while reading"


def rss_anon_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon")


@pytest.mark.long
def test_memory_stays_bounded_reading_a_big_checkpoint(big_checkpoint, foreground):
    files = 80  # 320 MiB of distinct, quickly compressible blobs, read one after another
    mounted = foreground(env={"HERMES_HOME": str(big_checkpoint)})
    baseline = rss_anon_kib(mounted.pid)
    peak = baseline
    for i in range(files):
        with open(mounted.mnt / "proj" / "1" / f"big{i}.bin", "rb") as fh:
            while fh.read(1 << 20):
                peak = max(peak, rss_anon_kib(mounted.pid))
    grown_mib = (peak - baseline) / 1024
    assert grown_mib < 192, f"the mount grew by {grown_mib:.0f} MiB reading 320 MiB"
    mounted.stop()


# -- lifecycle -------------------------------------------------------------------------------


def test_sigterm_unmounts_cleanly(store, project, foreground):
    take(store, project, "first")
    mounted = foreground()
    assert (mounted.mnt / "proj" / "1" / "README.md").exists()
    assert mounted.stop() == 0  # SIGTERM: exit 0, unmounted
    assert os.listdir(mounted.mnt) == []  # no ENOTCONN: really unmounted


def test_stale_mount_is_cleaned_before_mounting(store, project, mnt, foreground, run_rewind):
    take(store, project, "first")
    mounted = foreground()
    mounted.proc.kill()
    mounted.proc.wait(timeout=DEADLINE)
    with pytest.raises(OSError) as dead:
        os.listdir(mnt)
    assert dead.value.errno == errno.ENOTCONN
    run_rewind("mount", str(mnt), check=True)
    assert (mnt / "proj" / "1" / "README.md").exists()


def test_umount_and_errors(store, project, mount, mnt, run_rewind, store_dir):
    take(store, project, "first")
    mount()
    again = run_rewind("mount", str(mnt))
    assert again.returncode == 1 and "already mounted" in again.stderr
    assert run_rewind("umount", str(mnt), check=True).stdout.strip() == f"unmounted {mnt}"
    assert not os.path.ismount(mnt)
    missing = run_rewind("umount", str(mnt))
    assert missing.returncode == 1 and "nothing is mounted" in missing.stderr
    inside = run_rewind("mount", str(store_dir / "view"))
    assert inside.returncode == 1 and "inside the checkpoint store" in inside.stderr
    assert len(inside.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("option", ["--project", "-C"])
def test_project_option_shows_one_project(option, store, project, mount, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "f").write_text("f")
    take(store, project, "first")
    take(store, other, "first")
    mnt = mount(option, str(project))
    assert os.listdir(mnt) == ["proj"]


def test_missing_fusermount_names_the_package(run_rewind, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    proc = run_rewind("mount", str(tmp_path / "m"), env={"PATH": str(empty)})
    assert proc.returncode == 1
    assert "apt-get install fuse3" in proc.stderr and len(proc.stderr.splitlines()) == 1
