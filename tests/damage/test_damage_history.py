"""A history broken in the middle is never silent (issue 27, "a broken history is silent").

Three checkpoints, "one", "two", "three"; the loose commit of "two" is deleted. Every
command that meets the break says so in one line naming the object, lists what it can
still read ("one", found past the break from other evidence), and never resolves a
number, `latest` or a time to another checkpoint than the undamaged store does: what it
cannot place is refused in one line, and ids and labels still work.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest

from rewindfs.store import project_hash


def _short(oid: str) -> str:
    return oid[:8]


def _time(commit: pygit2.Commit) -> float:
    line = next(x for x in commit.message.splitlines() if x.startswith("Rewind-Time:"))
    return float(line.split(":", 1)[1])


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture
def broken(project: Path, store_dir: Path, run_rewind) -> dict[str, str]:
    """The project's checkpoints by reason, full ids, before the damage; "two" deleted."""
    for reason in ("one", "two", "three"):
        (project / "history.txt").write_text(f"{reason}\n")
        run_rewind("checkpoint", project, "-m", reason, check=True)
    run_rewind("list", project, check=True)  # what a person saw before the damage
    repo = pygit2.Repository(str(store_dir))
    tip = repo.references[f"refs/hermes/{project_hash(project)}"].peel(pygit2.Commit)
    two = tip.parents[0]
    one = two.parents[0]
    ids = {"three": str(tip.id), "two": str(two.id), "one": str(one.id),
           # a moment after "one" and before "two": "one" on the undamaged store
           "between": _iso((_time(one) + _time(two)) / 2)}
    loose = store_dir / "objects" / ids["two"][:2] / ids["two"][2:]
    assert loose.is_file(), "the template must keep 'two' as a loose object"
    loose.unlink()
    return ids


def _warned(proc: subprocess.CompletedProcess, two: str) -> str:
    """The one warning line naming the damaged object (asserted), returned."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("rewind: warning: history broken"), proc.stderr
    assert f"objects/{two[:2]}/{two[2:]}" in lines[0], proc.stderr
    return lines[0]


def _refused(proc: subprocess.CompletedProcess, two: str) -> str:
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rewind: "), proc.stderr
    assert f"objects/{two[:2]}/{two[2:]}" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_list_says_where_it_breaks_and_lists_what_is_past_it(project, broken, run_rewind):
    proc = run_rewind("list", project)
    assert proc.returncode == 0, proc.stderr
    _warned(proc, broken["two"])
    rows = [line.split() for line in proc.stdout.splitlines()]
    listed = {row[1]: row[0] for row in rows if len(row) > 1 and len(row[1]) == 8}
    # "three" keeps its number; "one", past the break, is listed without one.
    assert listed == {_short(broken["three"]): "1.", _short(broken["one"]): "?"}, proc.stdout
    assert "history broken here" in proc.stdout

    as_json = run_rewind("list", project, "--json")
    assert as_json.returncode == 0, as_json.stderr
    _warned(as_json, broken["two"])
    got = {cp["hash"]: (cp["number"], cp["past_break"]) for cp in json.loads(as_json.stdout)}
    assert got == {broken["three"]: (1, False), broken["one"]: (None, True)}


def test_numbers_never_name_another_checkpoint(project, broken, run_rewind):
    # 1 and latest are "three", as on the undamaged store.
    for ref in ("1", "latest"):
        shown = run_rewind("show", ref, "-C", project)
        assert shown.returncode == 0, shown.stderr
        assert "three" in shown.stdout and broken["three"][:8] in shown.stdout
        _warned(shown, broken["two"])
    # 2 was "two" (damaged) and 3 was "one": past the break nobody can count, so both are
    # refused in one line naming the object instead of naming another checkpoint.
    for ref in ("2", "3", "4"):
        _refused(run_rewind("show", ref, "-C", project), broken["two"])
    _refused(run_rewind("restore", "3", "-C", project, "--yes"), broken["two"])
    assert (project / "history.txt").read_text() == "three\n"  # nothing changed
    # A time between "one" and "two" is "one" on a whole store; here "two" might be
    # newer than it or not (its time is in the damaged object): refused too.
    _refused(run_rewind("show", broken["between"], "-C", project), broken["two"])
    # The damaged checkpoint by its id: its own damage, in one line.
    _refused(run_rewind("show", broken["two"][:8], "-C", project), broken["two"])


def test_what_lies_past_the_break_is_reachable_by_id(project, broken, run_rewind):
    one = broken["one"][:8]
    shown = run_rewind("show", one, "-C", project)
    assert shown.returncode == 0 and "one" in shown.stdout, shown.stderr
    _warned(shown, broken["two"])
    restored = run_rewind("restore", one, "-C", project, "--yes")
    assert restored.returncode == 0, restored.stderr
    assert (project / "history.txt").read_text() == "one\n"
    undone = run_rewind("undo", "-C", project)
    assert undone.returncode == 0, undone.stderr
    assert (project / "history.txt").read_text() == "three\n"


def test_check_reports_the_break(project, broken, run_rewind):
    proc = run_rewind("check")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"objects/{broken['two'][:2]}/{broken['two'][2:]}" in proc.stdout
    assert "history of refs/hermes/" in proc.stdout


def test_the_api_lists_past_the_break_too(project, broken, mgr, caplog):
    listed = mgr.list_checkpoints(str(project))
    assert [(cp["number"], cp.get("past_break")) for cp in listed] == [(1, False),
                                                                      (None, True)]
    assert any(broken["two"][:8] in r.getMessage() and "history broken" in r.getMessage()
               for r in caplog.records), caplog.text


def test_gc_never_deletes_what_lies_past_the_break(project, broken, store, run_rewind):
    """To git, "one" is garbage once "two" is gone: nothing reaches it. git refuses to
    repack a ref whose history it cannot read, so `rewind prune` deletes nothing while
    the break is there (not even real garbage), says why in one line, and "one" stays
    readable."""
    repo = pygit2.Repository(str(store.layout.store))
    garbage = str(repo.create_blob(b"nothing refers to this\n"))
    proc = run_rewind("prune", "-f")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [said] = [line for line in proc.stderr.splitlines() if "gc failed" in line]
    assert f"Could not read {broken['two']}" in said, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    repo = pygit2.Repository(str(store.layout.store))
    assert garbage in repo.odb and broken["one"] in repo.odb
    shown = run_rewind("cat", broken["one"][:8], "history.txt", "-C", project)
    assert shown.returncode == 0 and shown.stdout == "one\n", shown.stderr
