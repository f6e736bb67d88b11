"""Durable across a power cut: the order of the real system calls of a checkpoint, a
restore and an undo, read from strace (git's `core.fsync=committed` discipline).

A power cut keeps what was fsynced and loses the rest in any order, renames
included. So for every file put in place (a rename or a hard link, as libgit2 does
it) the test asserts from the trace that:

* its data was on disk before its name moved: an fsync of the file under its
  temporary name (or a syncfs after its last write), before the rename;
* its new name was on disk before anything named it: an fsync of its directory
  after the rename, before the next ref update, the next journal record, and the
  end of the command.

And for a restore: the journal's intent record is fsynced after the pre-rollback
commit it names is on disk, and its completion record after every restored file.
The project's index (a stat cache, rebuilt when damaged) is exempt, as in git, and so
are the store's caches (store/caches/: what a cache says is rebuilt when it is missing or
damaged).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REWIND, rewind_env
from test_restore_helpers import checkpoint, manager, write

from rewindfs.store import project_hash

TRACED = "fsync,fdatasync,syncfs,rename,renameat,renameat2,link,linkat,write"
_CALL = re.compile(r"^(?P<pid>\d+) +(?P<call>\w+)\((?P<args>.*)\) += (?P<ret>-?\d+)")
_RESUMED = re.compile(r"^(?P<pid>\d+) +<\.\.\. (?P<call>\w+) resumed>(?P<rest>.*)$")
_FD = re.compile(r"^(?:-?\d+|AT_FDCWD)(?:<(?P<path>[^>]*)>)?")
_STRING = re.compile(r'^"(?P<text>(?:[^"\\]|\\.)*)"')


@dataclass
class Call:
    index: int
    name: str
    paths: list[str]  # fd paths (strace -y) and path arguments, in argument order
    ok: bool


@dataclass
class Placed:
    """A file put in place: renamed (or linked) from `src` to `dst` at `index`."""

    index: int
    src: str
    dst: str


def strace() -> str:
    path = shutil.which("strace")
    if path is None:
        pytest.fail("strace is missing: scripts/setup installs it (apt-get install strace)")
    probe = subprocess.run([path, "-f", "-qq", "-o", os.devnull, "true"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here (ptrace refused?): {probe.stderr.strip()}")
    return path


def traced(tmp_path: Path, env: dict[str, str], cwd: Path, *args: str) -> list[Call]:
    """Run `rewind ARGS` under strace; its calls of interest, in order."""
    out = tmp_path / f"trace-{args[0]}"
    proc = subprocess.run([strace(), "-f", "-qq", "-y", "-s", "0", "-e", f"trace={TRACED}",
                           "-o", str(out), REWIND, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return parse(out.read_text())


def parse(text: str) -> list[Call]:
    pending: dict[str, str] = {}  # pid -> the start of an unfinished call
    calls: list[Call] = []
    for line in text.splitlines():
        if line.endswith("<unfinished ...>"):
            pid = line.split(None, 1)[0]
            pending[pid] = line[: -len("<unfinished ...>")].rstrip()
            continue
        resumed = _RESUMED.match(line)
        if resumed:
            line = pending.pop(resumed["pid"], "") + resumed["rest"]
        m = _CALL.match(line)
        if m is None:
            continue
        calls.append(Call(len(calls), m["call"], _paths(m["args"]), int(m["ret"]) >= 0))
    return calls


def _paths(args: str) -> list[str]:
    """Paths of the arguments: an fd's path (strace -y), or a string, joined with the
    directory fd before it (renameat(dirfd, "name", ...))."""
    out: list[str] = []
    base: str | None = None
    rest = args
    while rest:
        rest = rest.lstrip(", ")
        fd = _FD.match(rest)
        string = _STRING.match(rest)
        if string:
            text = string["text"].encode().decode("unicode_escape")
            out.append(os.path.join(base, text) if base and not text.startswith("/") else text)
            base = None
            rest = rest[string.end():]
        elif fd and fd.group(0):
            base = fd["path"]
            if fd["path"] is not None:
                out.append(fd["path"])
            rest = rest[fd.end():]
        else:
            rest = rest.partition(",")[2]
    return out


def placements(calls: list[Call]) -> list[Placed]:
    """Every file put in place: a rename, or a hard link to a new name (libgit2's way)."""
    found = []
    for call in calls:
        if call.ok and call.name in ("rename", "renameat", "renameat2", "link", "linkat"):
            src, dst = _two_names(call)
            found.append(Placed(call.index, src, dst))
    return found


def _two_names(call: Call) -> tuple[str, str]:
    # renameat(dirfd<d>, "a", dirfd<d>, "b"): paths = [d, d/a, d, d/b]
    names = [p for i, p in enumerate(call.paths)
             if not (i + 1 < len(call.paths) and call.paths[i + 1].startswith(p + "/"))]
    assert len(names) == 2, call
    return names[0], names[1]


def data_synced_before(calls: list[Call], placed: Placed) -> bool:
    """An fsync of the file under its old name, or a syncfs after its last write."""
    last_write = max((c.index for c in calls[: placed.index]
                      if c.name == "write" and c.paths[:1] == [placed.src]), default=-1)
    return any((c.name in ("fsync", "fdatasync") and c.paths == [placed.src])
               or (c.name == "syncfs" and c.index > last_write)
               for c in calls[: placed.index])


def dir_synced_after(calls: list[Call], placed: Placed, until: int) -> bool:
    """An fsync of the new name's directory after it was placed and before `until`."""
    directory = os.path.dirname(placed.dst)
    return any(c.name == "syncfs" or (c.name == "fsync" and c.paths == [directory])
               for c in calls[placed.index + 1: until])


def namers(calls: list[Call], store: Path) -> list[int]:
    """Indexes of the calls that name something: a ref moved into place, a journal record."""
    refs = str(store / "refs") + "/"
    out = [p.index for p in placements(calls) if p.dst.startswith(refs)]
    out += [c.index for c in calls if c.name == "write"
            and c.paths[:1] and c.paths[0].endswith("/restores.jsonl")]
    return sorted(out)


def assert_durable(calls: list[Call], store: Path, project: Path) -> list[Placed]:
    """Every file put in place in the store or the project obeys the discipline (the
    project's index excepted); returns them."""
    marks = namers(calls, store)
    checked = []
    for placed in placements(calls):
        if not placed.dst.startswith((str(store) + "/", str(project) + "/")):
            continue
        if re.search(r"/worktrees/[0-9a-f]{16}/index$", placed.dst):
            continue  # the stat cache: not fsynced, dropped when damaged
        if placed.dst.startswith(str(store) + "/caches/"):
            continue  # caches (the store's size, ...): rebuilt when missing or damaged
        nxt = next((m for m in marks if m > placed.index), len(calls))
        assert data_synced_before(calls, placed), f"{placed.dst}: renamed before its data " \
                                                  f"was synced"
        assert dir_synced_after(calls, placed, nxt), f"{placed.dst}: its directory was not " \
                                                     f"fsynced before the next ref or record"
        checked.append(placed)
    return checked


def journal_records(calls: list[Call]) -> list[int]:
    """Indexes of the fsyncs of the restore journal (one per record)."""
    return [c.index for c in calls if c.name == "fsync" and c.paths[:1]
            and c.paths[0].endswith("/restores.jsonl")]


def journal_writes(calls: list[Call]) -> list[int]:
    return [c.index for c in calls if c.name == "write" and c.paths[:1]
            and c.paths[0].endswith("/restores.jsonl")]


@pytest.fixture
def env(home: Path, tmp_path: Path) -> dict[str, str]:
    return rewind_env(home, tmp_path / "user-home")


def object_path(store: Path, oid: str) -> str:
    return str(store / "objects" / oid[:2] / oid[2:])


def test_checkpoint_objects_then_ref(home, store_dir, project, env, tmp_path):
    mgr = manager(home)
    checkpoint(mgr, project, "first")  # the store exists: its creation is not traced
    write(project, {"src/pkg/core.py": "changed\n", "src/new/deep/file.txt": "new\n"})
    calls = traced(tmp_path, env, project, "checkpoint", "-m", "second")
    placed = assert_durable(calls, store_dir, project)
    ref = str(store_dir / "refs/hermes" / project_hash(project))
    ref_at = [p.index for p in placed if p.dst == ref]
    objects = [p for p in placed if p.dst.startswith(str(store_dir / "objects") + "/")]
    # the scenario: new objects (blob, trees, commit) and one ref update, all traced
    assert len(ref_at) == 1 and len(objects) >= 4, [p.dst for p in placed]
    tip = mgr.store.repo.references.get(f"refs/hermes/{project_hash(project)}").target
    commit = object_path(store_dir, str(tip))
    assert [p.dst for p in objects][-1] == commit  # the commit is the last object written
    assert all(p.index < ref_at[0] for p in objects)


def test_restore_and_undo(home, store_dir, project, env, tmp_path):
    mgr = manager(home)
    write(project, {f"many/f{i:02d}.txt": f"v1 {i}\n" for i in range(40)})
    write(project, {"a.txt": "a v1\n", "sub/b.txt": "b v1\n"})
    target = checkpoint(mgr, project, "target")
    write(project, {f"many/f{i:02d}.txt": f"v2 {i}\n" for i in range(40)})
    write(project, {"a.txt": "a v2\n", "extra.txt": "made later\n"})
    (project / "sub/b.txt").unlink()
    (project / "sub").rmdir()

    for args in (("restore", target[:8], "--yes"), ("undo",)):
        calls = traced(tmp_path, env, project, *args)
        placed = assert_durable(calls, store_dir, project)
        restored = [p for p in placed if p.dst.startswith(str(project) + "/")]
        records = journal_records(calls)
        writes = journal_writes(calls)
        # the scenario: an intent and a completion record, and 40+ files restored in a
        # batch (data synced by one syncfs) around them
        assert len(writes) == 2 and len(records) == 2, (writes, records)
        assert len(restored) >= 41 and any(c.name == "syncfs" for c in calls)
        # a file the plan creates is placed without replacing (RENAME_NOREPLACE)
        assert any(c.name == "renameat2" and c.ok for c in calls)
        begin, end = writes
        assert records[0] > begin and records[1] > end  # each record fsynced after it
        assert all(begin < p.index < end for p in restored)
        # the pre-rollback commit the intent names was on disk before the intent
        entry = json.loads((store_dir / "worktrees" / project_hash(project)
                            / "restores.jsonl").read_text().splitlines()[-2])
        assert entry["event"] == "begin"
        commit = object_path(store_dir, entry["pre_rollback"])
        made = [p for p in placed if p.dst == commit]
        assert len(made) == 1 and made[0].index < begin
        assert dir_synced_after(calls, made[0], begin)
        # every restored file's directory was fsynced before the completion record
        for p in restored:
            assert dir_synced_after(calls, p, end), p.dst


def test_a_small_restore_fsyncs_each_file(home, store_dir, project, env, tmp_path):
    mgr = manager(home)
    target = checkpoint(mgr, project, "target")
    write(project, {"README.md": "changed\n", "docs/guide.txt": "changed too\n"})
    calls = traced(tmp_path, env, project, "restore", target[:8], "--yes")
    placed = assert_durable(calls, store_dir, project)
    restored = [p for p in placed if p.dst.startswith(str(project) + "/")]
    assert sorted(p.dst for p in restored) == [str(project / "README.md"),
                                               str(project / "docs/guide.txt")]
    assert not any(c.name == "syncfs" for c in calls)  # two files: an fsync each
    for p in restored:
        assert any(c.name == "fsync" and c.paths == [p.src] for c in calls[: p.index])


def test_a_new_project_admin_dir_is_durable_before_it_is_in_place(home, store_dir, project,
                                                                  env, tmp_path):
    other = tmp_path / "other"
    write(other, {"a.txt": "a\n"})
    checkpoint(manager(home), other, "the store exists")
    calls = traced(tmp_path, env, project, "checkpoint", "-m", "first of this project")
    placed = assert_durable(calls, store_dir, project)
    admin = str(store_dir / "worktrees" / project_hash(project))
    moved = [p for p in placed if p.dst == admin]
    assert len(moved) == 1, [p.dst for p in placed]  # the scenario: registered in this run
    synced = {os.path.basename(c.paths[0]) for c in calls[: moved[0].index]
              if c.name == "fsync" and c.paths and c.paths[0].startswith(moved[0].src + "/")}
    assert {"HEAD", "commondir", "gitdir"} <= synced, synced
