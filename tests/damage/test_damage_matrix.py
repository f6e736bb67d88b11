"""A damaged store never gives a traceback or a hang: every command ends in success or
one line naming the damaged file, exit 3 (issue 10, "nothing waits forever").

Each case copies a real store made by the real CLI (three checkpoints, a label, a
restore; loose objects, or everything packed by `git repack`), damages one file the
way disks, crashes and stray tools do, and runs one real `rewind` subprocess on it.
A hang fails the case through the subprocess timeout.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REWIND, isolated_git_env, rewind_env

TIMEOUT = 60  # a case that takes this long is hung: without the fixes it never ends

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


PROJECT_COMMANDS = {"checkpoint", "checkpoint-edited", "label", "restore", "restore-label",
                    "undo", "list", "list-all", "diff", "diff-label", "show"}


@dataclass
class Template:
    root: Path
    project: Path
    packed: bool

    @property
    def store(self) -> Path:
        return self.root / "home" / "checkpoints" / "store"


@dataclass
class Ids:
    h16: str
    tip: str
    chain: list[str]
    label: str
    tree: str
    blob: str
    label_tree: str
    label_blob: str


@dataclass
class Damage:
    apply: Callable[[Path, Ids], None]
    names: Callable[[Ids], str]  # a fragment of the damaged file's path
    must_fail: set[str] = field(default_factory=set)  # commands that must exit 3
    packed: bool = False
    may_be_incomplete: set[str] = field(default_factory=set)  # restores: exit 1 allowed


def _run(home: Path, fake_home: Path, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([REWIND, *argv], env=rewind_env(home, fake_home), capture_output=True,
                          text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def _git(store: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], env=isolated_git_env(GIT_DIR=str(store)),
                          capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.strip()


def _make_template(root: Path, packed: bool) -> Template:
    home, project, fake = root / "home", root / "proj", root / "user-home"
    for d in (home, project / "src", fake):
        d.mkdir(parents=True)
    (project / "README.md").write_text("# sample\n" * 20)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "src" / "a.py").write_text("print('a')\n" * 50)

    def ok(*argv: str) -> None:
        proc = _run(home, fake, list(argv))
        assert proc.returncode == 0, proc.stderr

    ok("checkpoint", str(project), "-m", "one", "--label", "lab0")
    (project / "src" / "a.py").write_text("print('b')\n" * 50)
    ok("checkpoint", str(project), "-m", "two")
    (project / "src" / "b.py").write_text("print('c')\n" * 50)
    ok("checkpoint", str(project), "-m", "three")
    ok("restore", "2", "-C", str(project), "--yes")  # writes restores.jsonl
    template = Template(root, project, packed)
    if packed:
        _git(template.store, "repack", "-a", "-d", "-q")
        _git(template.store, "prune-packed")
    shutil.copytree(project, root / "proj-pristine", symlinks=True)
    return template


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Template]:
    base = tmp_path_factory.mktemp("damage-templates")
    return {packed: _make_template(base / ("packed" if packed else "loose"), packed)
            for packed in (False, True)}


def _ids(store: Path, project: Path) -> Ids:
    h16 = hashlib.sha256(os.fsencode(str(project.resolve()))).hexdigest()[:16]
    tip = _git(store, "rev-parse", f"refs/hermes/{h16}")
    label = _git(store, "rev-parse", f"refs/rewind/labels/{h16}/lab0")
    return Ids(h16=h16, tip=tip, chain=_git(store, "rev-list", "--first-parent", tip).split(),
               label=label, tree=_git(store, "rev-parse", f"{tip}^{{tree}}"),
               blob=_git(store, "rev-parse", f"{tip}:src/a.py"),
               label_tree=_git(store, "rev-parse", f"{label}^{{tree}}"),
               label_blob=_git(store, "rev-parse", f"{label}:src/a.py"))


# -- ways to damage a store -----------------------------------------------------------


def _loose(store: Path, oid: str) -> Path:
    return store / "objects" / oid[:2] / oid[2:]


def _truncate(path: Path, fraction: float = 0.5) -> None:
    data = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(data[: int(len(data) * fraction)])


def _flip(path: Path, at: float) -> None:
    data = bytearray(path.read_bytes())
    os.chmod(path, 0o644)
    start = int(len(data) * at)
    for i in range(start, min(start + 8, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _pack(store: Path, ext: str) -> Path:
    return next((store / "objects" / "pack").glob(f"pack-*.{ext}"))


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _append(path: Path, data: bytes) -> None:
    path.write_bytes(path.read_bytes() + data)


ALL_PROJECT = PROJECT_COMMANDS | {"check"}
# A checkpoint may rebuild what the working tree still holds, so it need not fail.
READS = ALL_PROJECT - {"checkpoint", "checkpoint-edited"}
OBJECT = "objects/{}/{}"

DAMAGES: dict[str, Damage] = {
    "ref-empty": Damage(lambda s, i: _write(s / "refs/hermes" / i.h16, b""),
                        lambda i: f"refs/hermes/{i.h16}", ALL_PROJECT),
    "ref-garbage": Damage(lambda s, i: _write(s / "refs/hermes" / i.h16, b"garbage\n"),
                          lambda i: f"refs/hermes/{i.h16}", ALL_PROJECT),
    "ref-dangling": Damage(lambda s, i: _write(s / "refs/hermes" / i.h16, b"1" * 40 + b"\n"),
                           lambda i: f"refs/hermes/{i.h16}", READS),
    "packed-refs-garbage": Damage(lambda s, i: _write(s / "packed-refs", b"garbage\n\0zz\n"),
                                  lambda i: "packed-refs", READS - {"label"}),
    "label-ref-garbage": Damage(
        lambda s, i: _write(s / "refs/rewind/labels" / i.h16 / "lab0", b"zz garbage\n"),
        lambda i: f"refs/rewind/labels/{i.h16}/lab0", {"restore-label", "diff-label", "check"}),
    # The index is only a stat cache: `diff` against the work tree (run beside `check`
    # here) rebuilds a damaged one, so check may find it whole. test_damage_cli checks
    # that a check on its own reports it.
    "index-garbage": Damage(lambda s, i: _write(s / "worktrees" / i.h16 / "index",
                                                os.urandom(300)),
                            lambda i: f"worktrees/{i.h16}/index"),
    "index-truncated": Damage(lambda s, i: _truncate(s / "worktrees" / i.h16 / "index"),
                              lambda i: f"worktrees/{i.h16}/index"),
    # Any command on the project rewrites it (see test_damage_repair.py), also while
    # `rewind check` runs, so check may find it repaired already.
    "admin-dir-commondir": Damage(
        lambda s, i: _write(s / "worktrees" / i.h16 / "commondir", b"/nonexistent\n"),
        lambda i: f"worktrees/{i.h16}"),
    "store-HEAD-garbage": Damage(lambda s, i: _write(s / "HEAD", b"garbage\n"),
                                 lambda i: "HEAD", {"check"}),
    "config-garbage": Damage(lambda s, i: _write(s / "config", b"[core\n\tbare = tr\0ue\n"),
                             lambda i: "config", ALL_PROJECT | {"status", "prune"}),
    "shallow-garbage": Damage(lambda s, i: _write(s / "shallow", b"garbage\n"),
                              lambda i: "shallow", ALL_PROJECT | {"status", "prune"}),
    "commit-truncated": Damage(lambda s, i: _truncate(_loose(s, i.tip)),
                               lambda i: OBJECT.format(i.tip[:2], i.tip[2:]),
                               READS),
    "commit-empty": Damage(lambda s, i: _truncate(_loose(s, i.tip), 0),
                           lambda i: OBJECT.format(i.tip[:2], i.tip[2:]),
                           READS),
    "commit-flipped": Damage(lambda s, i: _flip(_loose(s, i.chain[1]), 0.5),
                             lambda i: OBJECT.format(i.chain[1][:2], i.chain[1][2:]),
                             {"list", "restore", "diff", "show", "check"}),
    "tree-truncated": Damage(lambda s, i: _truncate(_loose(s, i.tree)),
                             lambda i: OBJECT.format(i.tree[:2], i.tree[2:]),
                             {"diff-label", "check"}),
    "blob-truncated": Damage(lambda s, i: _truncate(_loose(s, i.blob)),
                             lambda i: OBJECT.format(i.blob[:2], i.blob[2:]),
                             {"diff-label", "check"}),
    "blob-flipped": Damage(lambda s, i: _flip(_loose(s, i.blob), 0.6),
                           lambda i: OBJECT.format(i.blob[:2], i.blob[2:]),
                           {"diff-label", "check"}),
    "commit-missing": Damage(lambda s, i: _loose(s, i.chain[1]).unlink(),
                             lambda i: OBJECT.format(i.chain[1][:2], i.chain[1][2:]), {"check"}),
    "tree-missing": Damage(lambda s, i: _loose(s, i.label_tree).unlink(),
                           lambda i: OBJECT.format(i.label_tree[:2], i.label_tree[2:]),
                           {"diff-label", "restore-label", "check"}),
    "blob-missing": Damage(lambda s, i: _loose(s, i.label_blob).unlink(),
                           lambda i: OBJECT.format(i.label_blob[:2], i.label_blob[2:]),
                           {"diff-label", "restore-label", "check"},
                           may_be_incomplete={"restore-label"}),
    "pack-truncated": Damage(lambda s, i: _truncate(_pack(s, "pack")),
                             lambda i: "objects/pack/pack-", READS,
                             packed=True),
    "pack-flipped": Damage(lambda s, i: _flip(_pack(s, "pack"), 0.5),
                           lambda i: "objects/pack/pack-", {"restore-label", "check"},
                           packed=True),
    "idx-truncated": Damage(lambda s, i: _truncate(_pack(s, "idx")),
                            lambda i: "objects/pack/pack-", READS,
                            packed=True),
    "idx-garbage": Damage(lambda s, i: _write(_pack(s, "idx"), os.urandom(2000)),
                          lambda i: "objects/pack/pack-", READS,
                          packed=True),
    # Journal readers skip a line they cannot parse (a killed writer leaves one): the
    # restore recorded before it can still be undone, and check only mentions it.
    "restores-journal-not-utf8": Damage(
        lambda s, i: _append(s / "worktrees" / i.h16 / "restores.jsonl", b"\xff\xfe{\n"),
        lambda i: f"worktrees/{i.h16}/restores.jsonl"),
    "restores-journal-garbage": Damage(
        lambda s, i: _append(s / "worktrees" / i.h16 / "restores.jsonl", b'[1, 2]\n{"x"\n'),
        lambda i: f"worktrees/{i.h16}/restores.jsonl"),
    "project-record-garbage": Damage(lambda s, i: _write(s / "projects" / f"{i.h16}.json",
                                                         b"{garbage"),
                                     lambda i: f"projects/{i.h16}.json", {"check"}),
    "project-record-not-utf8": Damage(lambda s, i: _write(s / "projects" / f"{i.h16}.json",
                                                          b'{"workdir": "\xff\xfe"}'),
                                      lambda i: f"projects/{i.h16}.json", {"check"}),
    "steps-log-garbage": Damage(lambda s, i: _write(s / "steps" / f"{i.h16}.jsonl", b"\xff{\n["),
                                lambda i: f"steps/{i.h16}.jsonl"),
}


def _prepare(template: Template, case: Path, damage: Damage) -> tuple[Path, Ids]:
    home = case / "home"
    shutil.copytree(template.root / "home", home, symlinks=True)
    shutil.rmtree(template.project)
    shutil.copytree(template.root / "proj-pristine", template.project, symlinks=True)
    store = home / "checkpoints" / "store"
    ids = _ids(store, template.project)
    damage.apply(store, ids)
    return home, ids


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
def test_damaged_store_every_command_ends_in_one_line(name: str, templates, tmp_path: Path):
    damage = DAMAGES[name]
    template = templates[damage.packed]
    fake_home = tmp_path / "user-home"
    fake_home.mkdir()
    errors: list[str] = []

    # Commands that change the store or the project: each on a fresh copy, one by one.
    for command, (argv, mutates) in COMMANDS.items():
        if not mutates:
            continue
        case = tmp_path / command
        home, ids = _prepare(template, case, damage)
        proc = _run(home, fake_home, argv(template.project))
        errors += _verdict(name, command, damage, ids, proc)
        shutil.rmtree(case)

    # Read-only commands: one copy, run side by side.
    home, ids = _prepare(template, tmp_path / "read-only", damage)
    readers = {c: argv for c, (argv, mutates) in COMMANDS.items() if not mutates}
    with ThreadPoolExecutor(max_workers=4) as pool:
        procs = {c: pool.submit(_run, home, fake_home, argv(template.project))
                 for c, argv in readers.items()}
        for command, future in procs.items():
            errors += _verdict(name, command, damage, ids, future.result())
    assert not errors, "\n\n".join(errors)
