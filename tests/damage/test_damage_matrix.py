"""A damaged store never gives a traceback, a hang, or a silent wrong answer (issues 10
and 27): every command ends in one line naming the damaged file (exit 3), or succeeds
with exactly what it does on an undamaged copy of the same store, or, where damage
makes it read less (a history broken in the middle), with what it could read, a
warning naming the damaged file, and never a number that means another checkpoint.

Each case copies a template store (tests/damage/damages.py), damages one file, and runs
every command as one real `rewind` subprocess on it; the same commands on undamaged
copies of the template give what each result is compared with. `rewind check` runs
first, alone, and must never call a damaged store clean. A hang fails the case
through the subprocess timeout.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest
from damages import DAMAGES, Damage, Ids, Template, prepare, run
from test_restore_helpers import picture

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
    "cat": (lambda p: ["cat", "1", "src/a.py", "-C", str(p)], False),
    "cat-label": (lambda p: ["cat", "lab0", "src/a.py", "-C", str(p)], False),
    "log": (lambda p: ["log", "src/a.py", "-C", str(p)], False),
    "grep": (lambda p: ["grep", "print", "-C", str(p)], False),
    "restore-dry-run": (lambda p: ["restore", "2", "--dry-run", "-C", str(p)], False),
    "status": (lambda p: ["status"], False),
    "prune": (lambda p: ["prune", "--dry-run"], False),
    "check": (lambda p: ["check"], False),
}
def _edit(project: Path) -> None:
    (project / "src" / "a.py").write_text("print('edited')\n")


# How a command's success on a damaged store is held against the same command on an
# undamaged copy: "same" output; the same "tree" checkpointed; the same "picture" of the
# project after a restore; the same "numbers" (every numbered checkpoint the same one,
# nothing listed that is not a checkpoint); a "summary" that may differ only with a warning.
COMPARED = {"checkpoint": "tree", "checkpoint-edited": "tree", "label": "tree",
            "restore": "picture", "restore-label": "picture", "undo": "picture",
            "list": "numbers", "list-all": "numbers", "diff": "same", "diff-label": "same",
            "show": "same", "status": "summary", "prune": "summary", "cat": "same",
            "cat-label": "same", "log": "summary", "grep": "summary", "restore-dry-run": "same"}
ROW = re.compile(r"^\s+(\d+\.|-|\?)\s+([0-9a-f]{8})\s", re.M)


@dataclass
class Outcome:
    code: int
    stdout: str  # with the home directory, ages and sizes made run-independent
    stderr: str
    tree: str | None  # the project's newest checkpoint's tree after the command
    after: dict | None  # the project's files after the command

    def rows(self) -> dict[str, str]:
        """id -> number (`-` or `?` when it has none) of every checkpoint listed."""
        return {short: number for number, short in ROW.findall(self.stdout)}


def normalized(text: str, home: Path) -> str:
    text = text.replace(str(home), "<HOME>")
    # "now" too: the healthy answers are worked out once, so a damaged run may be a
    # minute older (the matrix run alone, after other tests on its worker).
    text = re.sub(r"\b(\d+(\.\d+)? ?[smhd] ago|now)\b", "<age>", text)
    text = re.sub(r"\b\d+(\.\d+)? ?(B|KB|MB|GB|KiB|MiB|GiB)\b", "<size>", text)
    text = re.sub(r"next in \d+[smhd]", "next in <time>", text)
    return re.sub(r"[ \t]+", " ", text)  # table columns as wide as the sizes in them


def outcome(template: Template, home: Path, ids: Ids, proc: subprocess.CompletedProcess,
            command: str) -> Outcome:
    tree = after = None
    if COMPARED.get(command) == "tree":
        store = home / "checkpoints" / "store"
        try:  # libgit2, as rewind reads it: git refuses a store whose HEAD is damaged
            repo = pygit2.Repository(str(store), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
            tree = str(repo.references[f"refs/hermes/{ids.h16}"].peel(pygit2.Tree).id)
        except (pygit2.GitError, KeyError, ValueError):
            tree = None
    if COMPARED.get(command) == "picture":
        after = picture(template.project)
    return Outcome(proc.returncode, normalized(proc.stdout, home), proc.stderr, tree, after)


def run_all(template: Template, damage: Damage | None, base: Path
            ) -> dict[str, tuple[Outcome, Ids]]:
    """Every command on copies of the template (`damage` done to each): `check` first and
    alone (other commands repair what it must see), then each command that changes
    something on a fresh copy, then the read-only ones side by side on one copy."""
    fake_home = base / "user-home"
    fake_home.mkdir(parents=True, exist_ok=True)
    done: dict[str, tuple[Outcome, Ids]] = {}
    order = ["check", *[c for c, (_, mutates) in COMMANDS.items() if mutates]]
    for command in order:
        case = base / command
        home, ids = prepare(template, case, damage)
        proc = run(home, fake_home, COMMANDS[command][0](template.project))
        done[command] = outcome(template, home, ids, proc, command), ids
        shutil.rmtree(case)
    home, ids = prepare(template, base / "read-only", damage)
    readers = [c for c, (_, mutates) in COMMANDS.items() if not mutates and c not in done]
    with ThreadPoolExecutor(max_workers=4) as pool:
        procs = {c: pool.submit(run, home, fake_home, COMMANDS[c][0](template.project))
                 for c in readers}
        for command, future in procs.items():
            done[command] = outcome(template, home, ids, future.result(), command), ids
    return done


@pytest.fixture(scope="session")  # once per worker, however xdist orders the tests
def healthy(damage_templates, tmp_path_factory) -> dict[bool, dict[str, Outcome]]:
    """What every command does on an undamaged copy of each template."""
    out = {}
    for packed, template in damage_templates.items():
        done = run_all(template, None, tmp_path_factory.mktemp("healthy"))
        out[packed] = {command: result for command, (result, _) in done.items()}
        failed = {c: r.stderr for c, r in out[packed].items() if r.code != 0}
        assert not failed, f"commands fail on an undamaged store: {failed}"
    return out


def _verdict(name: str, command: str, damage: Damage, ids: Ids, got: Outcome,
             whole: Outcome) -> list[str]:
    """What is wrong with the outcome of `command` on store damage `name` (empty: fine),
    `whole` being the same command's outcome on an undamaged copy."""
    where = f"{name} / {command}: exit {got.code}\nstdout: {got.stdout}\nstderr: {got.stderr}"
    named = damage.names(ids)
    errors = []
    if "Traceback" in got.stderr or "Exception ignored" in got.stderr:
        errors.append(f"traceback: {where}")
    if command == "check":
        wanted = 0 if damage.check == "reported" else 3
        if got.code != wanted:
            errors.append(f"check exits {got.code}, not {wanted}: {where}")
        if named not in got.stdout:
            errors.append(f"check does not name {named}: it calls a damaged store clean: "
                          f"{where}")
        return errors
    allowed = {0, 3} | ({1} if command in damage.may_be_incomplete else set())
    if command in damage.must_fail:
        allowed -= {0}
    if command in damage.must_succeed:
        allowed = {0}
    if got.code not in allowed:
        errors.append(f"exit {got.code} not in {sorted(allowed)}: {where}")
    if got.code == 3:
        lines = got.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("rewind: "):
            errors.append(f"not one line: {where}")
        elif named not in lines[0]:
            errors.append(f"does not name {named}: {where}")
    if got.code == 1 and command in damage.may_be_incomplete:
        if named.split("/")[-1][:8] not in got.stdout + got.stderr:
            errors.append(f"incomplete restore does not name the object: {where}")
    if got.code == 0:
        errors += _compared(command, damage, named, got, whole, where)
    return errors


def _compared(command: str, damage: Damage, named: str, got: Outcome, whole: Outcome,
              where: str) -> list[str]:
    """A success held against the same command on an undamaged copy."""
    how = COMPARED[command]
    warned = any(line.startswith("rewind: warning:") and named in line
                 for line in got.stderr.splitlines())
    differs = {"same": got.stdout != whole.stdout, "tree": got.tree != whole.tree,
               "picture": got.after != whole.after, "summary": got.stdout != whole.stdout,
               "numbers": got.stdout != whole.stdout}[how]
    if not differs:
        return []
    if how in ("same", "tree", "picture") or command in damage.must_succeed:
        return [f"succeeds with another result than on an undamaged store ({how}): {where}"
                f"\nundamaged: {whole.stdout}"]
    errors = []
    if how == "numbers":
        theirs, ours = whole.rows(), got.rows()
        wrong = {short: number for short, number in ours.items()
                 if number[0].isdigit() and theirs.get(short) != number}
        invented = set(ours) - set(theirs)
        if wrong or invented:
            errors.append(f"numbers another checkpoint than an undamaged store ({wrong}) or "
                          f"lists what is none ({invented}): {where}\nundamaged: {whole.stdout}")
    if not warned:
        errors.append(f"reads less than on an undamaged store without a warning naming "
                      f"{named}: {where}\nundamaged: {whole.stdout}")
    return errors


# One worker runs every case (scripts/test: --dist loadgroup), so the undamaged answers
# (`healthy`, every command on each template) are worked out once per run, not per worker.
@pytest.mark.xdist_group("damage-matrix")
@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_damaged_store_every_command_ends_in_one_line(name: str, damage_templates, healthy,
                                                      tmp_path: Path):
    damage = DAMAGES[name]
    template = damage_templates[damage.packed]
    whole = healthy[damage.packed]
    errors: list[str] = []
    for command, (got, ids) in run_all(template, damage, tmp_path).items():
        errors += _verdict(name, command, damage, ids, got, whole[command])
    assert not errors, "\n\n".join(errors)
