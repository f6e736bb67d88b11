"""The mount serves a fetched tree bomb lazily, in bounded memory, and unmounts promptly
(issue 34, case 1): a real FUSE mount, `find` through it under a memory watch; and the
names it shows for fetched projects and labels are always names (case 4)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from crafted import Crafted, h16
from remote_servers import Machine

from rewindfs.fs.trim import TABLE_LIMIT

WALK = 240.0  # seconds find may walk (it never ends: 4.3 billion paths)
ENTRIES = 200_000  # entries find lists before it is stopped: past TABLE_LIMIT directories
RSS_MB = 300  # the daemon grew without end (tens of MB a second) before


def fetched_bomb(tmp_path: Path) -> Machine:
    """A remote holding a bomb of directories only: every path a directory of its own (the
    kernel holds each one it looked up), 16 wide, 8 deep."""
    evil = Crafted(tmp_path / "evil.git")
    oid = evil.git("mktree", data=b"")
    for _ in range(8):
        oid = evil.tree({f"d{i:x}": ("040000", oid) for i in range(16)})
    evil.project(h16(1), evil.commit(oid, "directory bomb"), {"workdir": "/srv/app",
                                                               "host": "sandbox"})
    b = Machine(tmp_path, "b")
    b.rewind("remote", "add", "evil", evil.path)
    b.rewind("fetch", "evil")
    return b


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024


@pytest.mark.long
def test_find_through_a_fetched_bomb_keeps_the_daemon_small(tmp_path: Path, mnt: Path,
                                                           foreground):
    b = fetched_bomb(tmp_path)
    mount = foreground(env={"HERMES_HOME": str(b.hermes), "HOME": str(b.home)})
    top = mnt / "@evil" / "app" / "1"
    shown = subprocess.run(["ls", f"{top}/"], capture_output=True, text=True,
                           timeout=120)  # (it hung: the listing of the project walked it)
    assert shown.stdout.split() == [f"d{i:x}" for i in range(16)], shown.stderr

    listed = [0]
    find = subprocess.Popen(["find", f"{top}/"], stdout=subprocess.PIPE,  # `1` is a link
                            stderr=subprocess.DEVNULL)

    def count() -> None:
        assert find.stdout is not None
        while chunk := find.stdout.read1(1 << 16):
            listed[0] += chunk.count(b"\n")

    reader = threading.Thread(target=count, daemon=True)
    reader.start()
    peak, held, started = 0.0, [], time.monotonic()
    try:
        while listed[0] < ENTRIES and time.monotonic() - started < WALK:
            peak = max(peak, rss_mb(mount.pid))
            held.append(os.statvfs(mnt).f_files - 1)  # the inode table (operations.statfs)
            time.sleep(0.2)
    finally:
        find.kill()
        find.wait()
        reader.join(10)
    # The walk really went through more directories than the kernel may keep (each
    # `find` line here is one), so the kernel was asked to drop the oldest.
    assert listed[0] >= ENTRIES, f"find listed only {listed[0]} in {WALK} s"
    assert peak < RSS_MB, f"the daemon grew to {peak:.0f} MB"
    assert max(held) <= TABLE_LIMIT * 1.2, f"the kernel held {max(held)} names"

    said = time.monotonic()
    b.rewind("umount", mnt)
    mount.proc.wait(timeout=60)  # promptly: not minutes freeing gigabytes
    assert time.monotonic() - said < 60 and not os.path.ismount(mnt)


def test_hosts_and_labels_that_are_no_names_never_break_the_mount(tmp_path: Path, mnt: Path,
                                                                  foreground):
    """A `/` or NUL in a host, a `/` in a label: left out or replaced, never a name the
    kernel refuses (which failed the whole `@evil/` directory with EIO)."""
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.commit(evil.tree({"f": ("100644", evil.blob(b"x\n"))}), "one")
    evil.project(h16(1), tip, {"workdir": "/srv/app", "host": "ev/il"})
    evil.project(h16(2), tip, {"workdir": "/srv/app", "host": "nul\0host"})
    base = evil.project(h16(3), tip, {"workdir": "/srv/web", "host": "sandbox"})
    evil.git("update-ref", base + "labels/a/b", tip)
    evil.git("update-ref", base + "labels/ok", tip)
    b = Machine(tmp_path, "b")
    b.rewind("remote", "add", "evil", evil.path)
    b.rewind("fetch", "evil")
    foreground(env={"HERMES_HOME": str(b.hermes), "HOME": str(b.home)})
    names = sorted(os.listdir(mnt / "@evil"))
    assert len(names) == 3 and "web" in names, names
    assert all("/" not in n and "\0" not in n for n in names)
    web = os.listdir(mnt / "@evil" / "web")
    assert "ok" in web and "b" not in web and "a" not in web, web
    assert (mnt / "@evil" / "web" / "ok" / "f").read_bytes() == b"x\n"
