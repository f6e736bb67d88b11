"""A remote's times, records and labels, however odd or big (issue 34, case 5): a commit in
year 318857, a 300 MB project.json, JSON nested 100,000 deep, 20,000 labels; crafted
with plain git, every command bounded in time and memory from outside."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from crafted import Crafted, bounded, h16
from remote_servers import Machine, git_daemon

DEADLINE = 120.0
RSS_MB = 200


def fetched(tmp_path: Path, evil: Crafted) -> Machine:
    b = Machine(tmp_path, "b")
    b.rewind("remote", "add", "evil", evil.path)
    b.rewind("fetch", "evil", timeout=600)
    return b


def test_a_commit_in_year_318857_is_listed_with_a_warning(tmp_path: Path, mnt: Path,
                                                         foreground):
    """git takes the time, datetime does not: every command lists it (as 9999-12-30),
    says once that it is out of range, and the mount shows the project."""
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.fast_import({"f.txt": b"x\n"}, "from the far future",
                           when="9999999999999 +0000")
    evil.project(h16(1), tip, {"workdir": "/srv/app", "host": "sandbox"})
    b = fetched(tmp_path, evil)
    for args in (["show", "1", "-C", "@evil/app"], ["show", "1", "-C", "@evil/app", "--json"],
                 ["list", "-C", "@evil/app", "--json"], ["list", "--all-projects", "--json"],
                 ["list", "--all-projects"], ["status"], ["log", "f.txt", "-C", "@evil/app"]):
        done = b.rewind(*args, check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
        if args[-1] == "--json":
            json.loads(done.stdout)
    said = b.rewind("list", "-C", "@evil/app").stderr
    assert said.count("year 318857") == 1 and "shown as 9999-12-30" in said, said
    listed = json.loads(b.rewind("list", "-C", "@evil/app", "--json").stdout)
    assert listed[0]["timestamp"].startswith("9999-12-30")
    foreground(env={"HERMES_HOME": str(b.hermes), "HOME": str(b.home)})
    names = os.listdir(mnt / "@evil" / "app")
    assert "1" in names and any(n.startswith("9999-12-30") for n in names), names
    assert (mnt / "@evil" / "app" / "1" / "f.txt").read_bytes() == b"x\n"


@pytest.mark.long
def test_a_300_mb_record_is_never_read(tmp_path: Path):
    """2 KB to send, 300 MB to parse: status, list and fetch take it as no record."""
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.commit(evil.tree({"f.txt": ("100644", evil.blob(b"x\n"))}), "one")
    padding = 300 << 20
    with open(tmp_path / "record.json", "wb") as out:
        out.write(b'{"workdir": "/srv/app", "host": "sandbox", "pad": "')
        out.write(b"a" * padding)
        out.write(b'"}')
    record = evil.git("hash-object", "-w", str(tmp_path / "record.json"))
    meta = evil.tree({"project.json": ("100644", record)})
    base = evil.project(h16(1), tip)
    evil.git("update-ref", base + "meta", evil.commit(meta, "rewindfs project record"))
    (tmp_path / "record.json").unlink()
    b = Machine(tmp_path, "b")
    # Served by git daemon, so the sending side is not a child of the fetch (on file://
    # git runs it too, and its memory would count as ours).
    with git_daemon(tmp_path, tmp_path / "daemon.log") as prefix:
        b.rewind("remote", "add", "evil", prefix + evil.path.name)
        env = b.env()
        for args in (["fetch", "evil"], ["status"], ["list", "--all-projects"],
                     ["fetch", "evil"]):
            run = bounded(args, env, DEADLINE)
            assert run.code == 0, (args, run.stderr)
            assert run.max_rss_mb < RSS_MB, (args, f"{run.max_rss_mb:.0f} MB")
    listed = json.loads(b.rewind("list", "--remote", "evil", "--json").stdout)
    assert listed[0]["directory"] is None  # no record: named by its hash


def test_json_nested_100000_deep_is_refused_not_recursed_into(tmp_path: Path):
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.commit(evil.tree({"f.txt": ("100644", evil.blob(b"x\n"))}), "one")
    evil.project(h16(1), tip, b"[" * 100_000 + b"]" * 100_000)
    evil.project(h16(2), tip, b'{"workdir": "/srv/app", "host": ' + b"[" * 60_000
                 + b"]" * 60_000 + b"}")
    b = fetched(tmp_path, evil)
    for args in (["list", "--all-projects"], ["status"], ["list", "--remote", "evil"]):
        done = b.rewind(*args, check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)


def test_20000_labels_leave_status_and_list_quick(tmp_path: Path):
    """20,000 labels on one fetched checkpoint (and one named `a/b`): a thousand are used,
    the rest left out with one warning; the first status is seconds, not a minute."""
    evil = Crafted(tmp_path / "evil.git")
    tip = evil.commit(evil.tree({"f.txt": ("100644", evil.blob(b"x\n"))}), "labelled")
    base = evil.project(h16(1), tip, {"workdir": "/srv/app", "host": "sandbox"})
    evil.git("update-ref", "--stdin", data="".join(
        f"create {base}labels/l{i:05d} {tip}\n" for i in range(20_000)).encode())
    evil.git("update-ref", base + "labels/a/b", tip)
    b = fetched(tmp_path, evil)
    env = b.env()
    for args in (["status"], ["status"], ["list", "--all-projects"]):
        run = bounded(args, env, 60)
        assert run.code == 0, (args, run.stderr)
        assert run.seconds < 60
    listed = json.loads(b.rewind("list", "-C", "@evil/app", "--json").stdout)
    assert len(listed[0]["labels"]) == 1000 and "a/b" not in listed[0]["labels"]
    assert "19001 of the 20001 labels" in b.rewind("list", "-C", "@evil/app").stderr
