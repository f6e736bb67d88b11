"""A damaged store never gives a traceback or a hang: every command ends in success or
one line naming the damaged file, exit 3 (issue 10, "nothing waits forever").

Each case copies a real store made by the real CLI (three checkpoints, a label, a
restore; loose objects, or everything packed by `git repack`), damages one file the
way disks, crashes and stray tools do, and runs one real `rewind` subprocess on it.
A hang fails the case through the subprocess timeout.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from damages import DAMAGES, Damage, Ids, prepare, run

# Commands, each run on its own copy of the damaged store. Read-only ones share a copy.
COMMANDS: dict[str, tuple[Callable[[Path], list[str]], bool]] = {
    # name: (argv for the project, changes the store or the project)
    "checkpoint": (lambda p: ["checkpoint", str(p), "-m", "after damage"], True),
    # src/a.py edited first: libgit2 then reads the stored (maybe damaged) old version
    "checkpoint-edited": (lambda p: _edit(p) or ["checkpoint", str(p), "-m", "edited"], True),
    "label": (lambda p: ["checkpoint", str(p), "-m", "labelled", "--label", "lab1"], True),
    "restore": (lambda p: ["restore", "2", "-C", str(p), "--yes"], True),
    "restore-label": (lambda p: ["restore", "lab0", "-C", str(p), "--yes"], True),
    "undo": (lambda p: ["undo", "-C", str(p)], True),
    "list": (lambda p: ["list", str(p)], False),
    "list-all": (lambda p: ["list", "--all-projects"], False),
    "diff": (lambda p: ["diff", "2", "-C", str(p)], False),
    "diff-label": (lambda p: ["diff", "lab0", "1", "-C", str(p)], False),
    "show": (lambda p: ["show", "1", "-C", str(p)], False),
    "status": (lambda p: ["status"], False),
    "prune": (lambda p: ["prune", "--dry-run"], False),
    "check": (lambda p: ["check"], False),
}
def _edit(project: Path) -> None:
    (project / "src" / "a.py").write_text("print('edited')\n")


def _verdict(name: str, command: str, damage: Damage, ids: Ids,
             proc: subprocess.CompletedProcess) -> list[str]:
    """What is wrong with the outcome of `command` on store damage `name` (empty: fine)."""
    where = f"{name} / {command}: exit {proc.returncode}\nstdout: {proc.stdout}\n" \
            f"stderr: {proc.stderr}"
    errors = []
    if "Traceback" in proc.stderr or "Exception ignored" in proc.stderr:
        errors.append(f"traceback: {where}")
    allowed = {0, 3} | ({1} if command in damage.may_be_incomplete else set())
    if command in damage.must_fail:
        allowed = {3} | ({1} if command in damage.may_be_incomplete else set())
    if proc.returncode not in allowed:
        errors.append(f"exit {proc.returncode} not in {sorted(allowed)}: {where}")
    if proc.returncode == 3 and command != "check":
        lines = proc.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("rewind: "):
            errors.append(f"not one line: {where}")
        elif damage.names(ids) not in lines[0]:
            errors.append(f"does not name {damage.names(ids)}: {where}")
    if command == "check" and proc.returncode == 3 and damage.names(ids) not in proc.stdout:
        errors.append(f"check does not list {damage.names(ids)}: {where}")
    if proc.returncode == 1 and command in damage.may_be_incomplete:
        if damage.names(ids).split("/")[-1][:8] not in proc.stdout + proc.stderr:
            errors.append(f"incomplete restore does not name the object: {where}")
    return errors


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_damaged_store_every_command_ends_in_one_line(name: str, damage_templates,
                                                      tmp_path: Path):
    damage = DAMAGES[name]
    template = damage_templates[damage.packed]
    fake_home = tmp_path / "user-home"
    fake_home.mkdir()
    errors: list[str] = []

    # Commands that change the store or the project: each on a fresh copy, one by one.
    for command, (argv, mutates) in COMMANDS.items():
        if not mutates:
            continue
        case = tmp_path / command
        home, ids = prepare(template, case, damage)
        proc = run(home, fake_home, argv(template.project))
        errors += _verdict(name, command, damage, ids, proc)
        shutil.rmtree(case)

    # Read-only commands: one copy, run side by side.
    home, ids = prepare(template, tmp_path / "read-only", damage)
    readers = {c: argv for c, (argv, mutates) in COMMANDS.items() if not mutates}
    with ThreadPoolExecutor(max_workers=4) as pool:
        procs = {c: pool.submit(run, home, fake_home, argv(template.project))
                 for c, argv in readers.items()}
        for command, future in procs.items():
            errors += _verdict(name, command, damage, ids, future.result())
    assert not errors, "\n\n".join(errors)
