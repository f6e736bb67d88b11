"""Kilo Code's and OpenCode's steps in a real mount: beside our checkpoints, read-only,
gone steps shown as such, new steps appearing without a remount (the kernel's cached
listings invalidated), and a project of ours named like an agent's folder kept apart.
Data made as the agents make it (agentdata.py); the real CLIs' in test_sources_agents.py."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentdata import AgentData, sample
from conftest import isolated_git_env, wait_for

from rewindfs.store import take


def test_steps_beside_checkpoints(tmp_path, mnt, run_rewind, store):
    data = sample(tmp_path, "kilo")
    take(store, data.project, "ours")
    ours_named_kilo = tmp_path / "kilo"
    ours_named_kilo.mkdir()
    (ours_named_kilo / "f").write_text("x")
    take(store, ours_named_kilo, "a project called kilo")
    run_rewind("mount", str(mnt), env=data.env, check=True)
    names = sorted(os.listdir(mnt))
    assert "kilo" in names and "kilo-project" in names
    assert [n for n in names if n.startswith("kilo-") and n != "kilo-project"]  # ours, hashed
    project = mnt / "kilo" / "kilo-project"
    session = data.sessions[0].id
    assert sorted(os.listdir(project)) == sorted(["1", "2", "3", "latest", session])
    assert sorted(os.listdir(project / session)) == ["1.1", "1.2", "2.1", "end"]
    assert (project / "latest" / "b.txt").read_text() == "bye\n"
    assert (project / session / "1.1" / "a.txt").read_text() == "hello\n"
    # A file the steps did not change is one inode across them, with the first one's time.
    first, second = project / session / "1.1" / "b.txt", project / session / "1.2" / "b.txt"
    assert first.stat().st_ino == second.stat().st_ino
    assert first.stat().st_mtime_ns == (project / session / "1.1").stat().st_mtime_ns
    for write in (lambda: (project / "1" / "a.txt").write_text("x"),
                  lambda: os.mkdir(project / "new"), lambda: os.unlink(project / "1")):
        with pytest.raises(OSError) as caught:
            write()
        assert caught.value.errno == errno.EROFS
    diff = subprocess.run(["diff", "-r", str(project / "3"), str(project / "1")],
                          capture_output=True, text=True)
    assert "Only in" in diff.stdout and "a.txt" in diff.stdout


def test_new_steps_show_and_gone_ones_say_so(tmp_path, mnt, run_rewind):
    data = sample(tmp_path, "opencode")
    run_rewind("mount", str(mnt), env=data.env, check=True)
    project = mnt / "opencode" / "opencode-project"
    session = project / data.sessions[0].id
    assert sorted(os.listdir(session)) == ["1.1", "1.2", "2.1", "end"]  # listed: now cached
    data.turn("one more")
    data.step(lambda p: (p / "c.txt").write_text("third\n"))
    data.save()  # the agent writes its database while the mount lives
    wait_for(lambda: "3.1" in os.listdir(session), "the new step in the session's folder")
    wait_for(lambda: (project / "latest").readlink().name == "3.1", "latest moving to it")
    assert "c.txt" in os.listdir(session / "end")
    subprocess.run(["git", "--git-dir", str(data.gitdir), "gc", "-q", "--prune=now"],
                   check=True, env=isolated_git_env())
    data.turn("and another")  # a change to the records makes the mount read them again
    data.step()
    data.save()
    wait_for(lambda: (session / "2.1").is_symlink(), "step 2.1 shown as gone")
    assert os.readlink(session / "2.1") == "gone: pruned by opencode's git gc"
    assert not (session / "2.1").exists()
    assert (session / "1.1" / "a.txt").read_text() == "hello\n"  # committed work: still there


def test_mount_of_one_project_shows_its_agent_steps_only(tmp_path, mnt, run_rewind, store):
    data = sample(tmp_path, "kilo")
    other = sample(tmp_path, "kilo", project="other-project",
                   files={"a.txt": b"other\n", "b.txt": b"b\n", "c.txt": b"c\n"})
    assert other.data == data.data and other.project_id != data.project_id
    take(store, data.project, "ours")
    run_rewind("mount", str(mnt), env=data.env, check=True)
    assert sorted(os.listdir(mnt / "kilo")) == ["kilo-project", "other-project"]
    run_rewind("umount", str(mnt), check=True)
    run_rewind("mount", str(mnt), "-C", str(data.project), env=data.env, check=True)
    assert sorted(os.listdir(mnt / "kilo")) == ["kilo-project"]
    assert Path(mnt / "kilo" / "kilo-project" / "1" / "b.txt").read_text() == "bye\n"


PROBE = Path(__file__).resolve().parent.parent / "fs" / "readahead_probe.py"


def test_a_steps_listed_files_are_pushed_into_the_page_cache(tmp_path, home, fuse_usable):
    """Read ahead and pushed like our checkpoints' files (fs.blobs), even before our own
    store exists (git reads Kilo's objects from an empty repository of its own): the
    probe mount counts the reads that reach it; none does once the step's directory
    was listed."""
    from rewindfs.fs import capabilities

    assert capabilities.patched(), "scripts/setup builds the patched pyfuse3"
    expected = {f"f{i:03d}.txt": f"step file {i}\n" * (i + 1) for i in range(40)}
    data = AgentData(tmp_path / "agent", "kilo",
                     files={f"src/{name}": text.encode() for name, text in expected.items()})
    data.session("many files")
    data.turn("look")
    data.step()
    data.save()
    assert not (home / "checkpoints" / "store").exists()  # none of our own yet
    mnt, out, tmp = tmp_path / "mnt", tmp_path / "probe.json", tmp_path / "tmp"
    mnt.mkdir()
    tmp.mkdir()
    subprocess.run([sys.executable, str(PROBE), str(home), str(mnt), str(out), "-", "kilo"],
                   env={**os.environ, **data.env, "TMPDIR": str(tmp)}, check=True, timeout=180)
    assert list(tmp.iterdir()) == []  # git's empty repository went with the mount
    report = json.loads(out.read_text())
    assert "error" not in report, report
    assert "no-open" in report["mode"]
    assert report["pushed"] >= len(expected)  # read ahead through Kilo's snapshots, pushed
    assert report["files"] == expected
    assert report["reads_after"] == report["reads_before"]  # no read reached the daemon
