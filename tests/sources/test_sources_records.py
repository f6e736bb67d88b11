"""Reading Kilo Code's and OpenCode's records: both storages, older layouts, damage.

Data made as the agents make it (agentdata.py); the real CLIs' own data is read in
test_sources_agents.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agentdata import AgentData, sample

from rewindfs.errors import Busy, NotFound, UnknownFormat
from rewindfs.sources import reading, refs
from rewindfs.sources.agents import AGENTS
from rewindfs.sources.history import load


def history_of(data: AgentData, workdir: Path | None = None, **kw):
    return load(AGENTS[data.agent], workdir or data.project, data.data, **kw)


@pytest.mark.parametrize("storage", ["sqlite", "json"])
@pytest.mark.parametrize("agent", ["kilo", "opencode"])
def test_steps_newest_first_from_either_storage(tmp_path, agent, storage):
    data = sample(tmp_path, agent, storage=storage)
    history = history_of(data)
    assert [(i.short_ref, i.step.name, i.files) for i in history.listed] == [
        (f"{agent}:1", "2.1", ("b.txt",)),
        (f"{agent}:2", "1.2", ("a.txt",)),
        (f"{agent}:3", "1.1", ("new.txt",)),
    ]  # the answer steps changed nothing and start no turn: not listed
    first = history.listed[-1]
    assert first.turn.prompt == "make changes" and first.session.title == "Tidy the project"
    assert reading.read_file(history, history.listed[0], b"b.txt") == b"bye\n"
    assert not any(history.gone(i.step) for i in history.listed)
    assert refs.resolve(history, f"{agent}:latest") is history.listed[0]
    assert refs.resolve(history, history.listed[1].ref) is history.listed[1]
    step_id = history.listed[2].step.id
    assert refs.resolve(history, f"{agent}:{step_id}") is history.listed[2]
    session = first.session.id
    assert refs.resolve(history, f"{agent}:{session}/1.1") is first
    assert refs.resolve(history, f"{agent}:{session[:10]}") is history.listed[0]


def test_older_snapshot_dir_layout(tmp_path):
    data = sample(tmp_path, "opencode", storage="json", old_snapshot_dir=True)
    assert (data.data / "snapshot" / data.project_id / "HEAD").is_file()
    history = history_of(data)
    assert reading.read_file(history, history.listed[-1], b"a.txt") == b"hello\n"


def test_a_turn_that_changed_nothing_is_listed_at_its_start(tmp_path):
    data = AgentData(tmp_path)
    data.session()
    data.turn("just answer")
    data.step()
    data.save()
    [item] = history_of(data).listed
    assert (item.step.name, item.files, item.turn.prompt) == ("1.1", (), "just answer")


def test_unknown_schema_names_its_version(tmp_path, run_rewind):
    data = sample(tmp_path)
    db = sqlite3.connect(data.database())
    db.execute("ALTER TABLE part RENAME TO part_v9")
    db.execute("INSERT INTO migration VALUES ('20991231000000_parts_moved', 2)")
    db.commit()
    db.close()
    with pytest.raises(UnknownFormat, match="schema version 20991231000000_parts_moved"):
        history_of(data)
    proc = run_rewind("list", "--agent", "kilo", cwd=data.project, env=data.env)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "20991231000000_parts_moved" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_json_storage_version(tmp_path):
    data = sample(tmp_path, storage="json")
    (data.data / "storage" / "migration").write_text("7")
    with pytest.raises(UnknownFormat, match="storage version 7"):
        history_of(data)


def test_a_corrupt_json_record_is_skipped_and_named(tmp_path, run_rewind):
    data = sample(tmp_path, storage="json")
    history = history_of(data)
    victim = next((data.data / "storage" / "part").glob(f"*/{history.listed[1].step.id}.json"))
    victim.write_text('{"type": "step-sta')  # cut off mid-write
    history = history_of(data)
    assert [i.step.name for i in history.listed] == ["2.1", "1.1"]
    assert history.skipped == [str(victim)]
    proc = run_rewind("list", "--agent", "kilo", cwd=data.project, env=data.env, check=True)
    assert "skipped 1 unreadable Kilo Code record(s)" in proc.stderr
    assert "kilo:2" in proc.stdout


def test_database_written_while_we_read(tmp_path):
    """A writer in the middle of a transaction (as the agent is, all the time) does not
    stop a read, which sees what was committed."""
    data = sample(tmp_path)
    writer = sqlite3.connect(data.database(), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE session SET title = 'not yet committed'")
    try:
        history = history_of(data)
        assert history.listed[0].session.title == "Tidy the project"
    finally:
        writer.execute("ROLLBACK")
        writer.close()


HOLDER = textwrap.dedent("""
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA locking_mode = EXCLUSIVE")
    db.execute("BEGIN EXCLUSIVE")
    db.execute("UPDATE session SET title = title")
    print("locked", flush=True)
    sys.stdin.read()
""")


@pytest.mark.long
def test_locked_database_is_one_line_not_a_hang(tmp_path, run_rewind):
    data = sample(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(data.database())],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"  # the lock is held before we read
        with pytest.raises(Busy, match="locked by another process"):
            history_of(data, busy_seconds=0.2)
        proc = run_rewind("list", "--agent", "kilo", cwd=data.project, env=data.env,
                          timeout=60)
        assert proc.returncode == 4
        assert proc.stderr.startswith("rewind: kilo's database ") and \
            proc.stderr.count("\n") == 1
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert history_of(data).listed  # and readable again once it let go


def test_nothing_of_the_agents_is_written(tmp_path, run_rewind):
    data = sample(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in data.data.rglob("*") if p.is_file()}
    git_before = {p: p.stat().st_mtime_ns for p in (data.project / ".git").rglob("*")
                  if p.is_file()}
    for args in (["list", "--agent", "kilo"], ["show", "kilo:1"], ["cat", "kilo:2", "a.txt"],
                 ["log", "--agent", "kilo", "a.txt"], ["diff", "kilo:3", "kilo:1"],
                 ["import", "kilo"]):
        run_rewind(*args, cwd=data.project, env=data.env, check=True)
    after = {p: p.stat().st_mtime_ns for p in data.data.rglob("*") if p.is_file()}
    assert after == before
    assert {p: p.stat().st_mtime_ns for p in (data.project / ".git").rglob("*")
            if p.is_file()} == git_before


def test_moved_project_is_found_by_its_id(tmp_path):
    data = sample(tmp_path)
    moved = tmp_path / "elsewhere"
    data.project.rename(moved)
    with pytest.raises(NotFound):
        load(AGENTS["kilo"], tmp_path / "unrelated", data.data)
    history = load(AGENTS["kilo"], moved, data.data)
    assert history.moved_from == str(data.project)
    assert [i.files for i in history.listed] == [("b.txt",), ("a.txt",), ("new.txt",)]
    assert reading.read_file(history, history.listed[0], b"b.txt") == b"bye\n"


def test_json_records_need_no_database(tmp_path):
    data = sample(tmp_path, storage="json")
    assert not data.database().exists()
    raw = json.loads(next((data.data / "storage" / "session").glob("*/*.json")).read_text())
    assert raw["title"] == "Tidy the project"
    assert history_of(data).listed[0].files == ("b.txt",)
