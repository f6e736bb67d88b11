"""The damage catalog the damage tests share (tests/damage): template stores made by the
real CLI, and every way a store file gets damaged, each with the file it must be named by
and the commands that must fail on it.

A template is a store of two projects: `proj` (three checkpoints, a label, a restore,
so a note too) and `other` (one checkpoint); loose objects, or everything packed by
`git repack`. Each case copies it and damages one file the way disks, crashes and
stray tools do.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import forkrun
from conftest import REWIND, isolated_git_env, rewind_env

TIMEOUT = 60  # a command that takes this long is hung: without the fixes it never ends
OTHER_FILE = ("other.txt", b"the other project, untouched by every damage to proj\n")

PROJECT_COMMANDS = {"checkpoint", "checkpoint-edited", "label", "restore", "restore-label",
                    "undo", "list", "list-all", "diff", "diff-label", "show", "cat",
                    "cat-label", "log", "grep", "restore-dry-run"}


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
    notes: str  # the notes commit of proj (the restore recorded modes on its tip)
    notes_tree: str
    note_blob: str


@dataclass
class Template:
    root: Path
    project: Path
    packed: bool
    ids: Ids  # the same in every copy (the objects copied byte for byte, the same project)

    @property
    def store(self) -> Path:
        return self.root / "home" / "checkpoints" / "store"

    @property
    def other(self) -> Path:
        return self.root / "other"


@dataclass
class Damage:
    apply: Callable[[Path, Ids], None]
    names: Callable[[Ids], str]  # a fragment of the damaged file's path
    must_fail: set[str] = field(default_factory=set)  # commands that must exit 3
    packed: bool = False
    may_be_incomplete: set[str] = field(default_factory=set)  # restores: exit 1 allowed
    # Commands that must succeed as on an undamaged store (what they read is intact).
    must_succeed: set[str] = field(default_factory=set)
    # What `rewind check` says: "damaged" (exit 3) or "reported" (a harmless finding,
    # exit 0); either way it names the file: it never calls a damaged store clean.
    check: str = "damaged"


def run(home: Path, fake_home: Path, argv: list[str]) -> subprocess.CompletedProcess:
    # finalize: the matrix checks that nothing is printed on the way out, the modules'
    # teardown included.
    return forkrun.run(REWIND, argv, env=rewind_env(home, fake_home), timeout=TIMEOUT,
                       finalize=True)


def git(store: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], env=isolated_git_env(GIT_DIR=str(store)),
                          capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.strip()


def make_template(root: Path, packed: bool) -> Template:
    home, project, fake = root / "home", root / "proj", root / "user-home"
    for d in (home, project / "src", fake):
        d.mkdir(parents=True)
    (project / "README.md").write_text("# sample\n" * 20)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "src" / "a.py").write_text("print('a')\n" * 50)

    def ok(*argv: str) -> None:
        proc = run(home, fake, list(argv))
        assert proc.returncode == 0, proc.stderr

    ok("checkpoint", str(project), "-m", "one", "--label", "lab0")
    (project / "src" / "a.py").write_text("print('b')\n" * 50)
    ok("checkpoint", str(project), "-m", "two")
    (project / "src" / "b.py").write_text("print('c')\n" * 50)
    ok("checkpoint", str(project), "-m", "three")
    ok("restore", "2", "-C", str(project), "--yes")  # writes restores.jsonl and a note
    other = root / "other"
    other.mkdir()
    (other / OTHER_FILE[0]).write_bytes(OTHER_FILE[1])
    ok("checkpoint", str(other), "-m", "other")
    store = home / "checkpoints" / "store"
    if packed:
        git(store, "repack", "-a", "-d", "-q")
        git(store, "prune-packed")
    shutil.copytree(project, root / "proj-pristine", symlinks=True)
    return Template(root, project, packed, ids_of(store, project))


def make_templates(base: Path) -> dict[bool, Template]:
    """{packed: template}: a loose and a packed store made by the real CLI under `base`."""
    return {packed: make_template(base / ("packed" if packed else "loose"), packed)
            for packed in (False, True)}


def ids_of(store: Path, project: Path) -> Ids:
    h16 = hashlib.sha256(os.fsencode(str(project.resolve()))).hexdigest()[:16]
    tip = git(store, "rev-parse", f"refs/hermes/{h16}")
    label = git(store, "rev-parse", f"refs/rewind/labels/{h16}/lab0")
    notes = git(store, "rev-parse", f"refs/notes/rewind/{h16}")
    return Ids(h16=h16, tip=tip, chain=git(store, "rev-list", "--first-parent", tip).split(),
               label=label, tree=git(store, "rev-parse", f"{tip}^{{tree}}"),
               blob=git(store, "rev-parse", f"{tip}:src/a.py"),
               label_tree=git(store, "rev-parse", f"{label}^{{tree}}"),
               label_blob=git(store, "rev-parse", f"{label}:src/a.py"),
               notes=notes, notes_tree=git(store, "rev-parse", f"{notes}^{{tree}}"),
               note_blob=git(store, "rev-parse", f"{notes}:{tip}"))


# -- ways to damage a store -----------------------------------------------------------


def loose(store: Path, oid: str) -> Path:
    return store / "objects" / oid[:2] / oid[2:]


def truncate(path: Path, fraction: float = 0.5) -> None:
    data = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(data[: int(len(data) * fraction)])


def flip(path: Path, at: float) -> None:
    data = bytearray(path.read_bytes())
    os.chmod(path, 0o644)
    start = int(len(data) * at)
    for i in range(start, min(start + 8, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def flip_packed(store: Path, oid: str) -> None:
    """Flip bytes at the start of `oid`'s own entry in the pack (found through the pack
    index), so exactly the object the damage is about is unreadable, wherever the repack
    placed it."""
    with open(pack(store, "idx"), "rb") as idx:
        listed = subprocess.run(["git", "show-index"], stdin=idx, capture_output=True,
                                text=True, check=True, env=isolated_git_env()).stdout
    [offset] = [int(line.split()[0]) for line in listed.splitlines() if line.split()[1] == oid]
    path = pack(store, "pack")
    data = bytearray(path.read_bytes())
    os.chmod(path, 0o644)
    for i in range(offset + 2, offset + 10):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def pack(store: Path, ext: str) -> Path:
    return next((store / "objects" / "pack").glob(f"pack-*.{ext}"))


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def append(path: Path, data: bytes) -> None:
    path.write_bytes(path.read_bytes() + data)


ALL_PROJECT = PROJECT_COMMANDS | {"check"}
LABEL_READS = {"restore-label", "diff-label", "cat-label", "check"}  # what reads the label
EVERY = PROJECT_COMMANDS | {"status", "prune"}  # every command but check
# A checkpoint may rebuild what the working tree still holds, so it need not fail.
READS = ALL_PROJECT - {"checkpoint", "checkpoint-edited"}
OBJECT = "objects/{}/{}"

DAMAGES: dict[str, Damage] = {
    "ref-empty": Damage(lambda s, i: write(s / "refs/hermes" / i.h16, b""),
                        lambda i: f"refs/hermes/{i.h16}", ALL_PROJECT),
    "ref-garbage": Damage(lambda s, i: write(s / "refs/hermes" / i.h16, b"garbage\n"),
                          lambda i: f"refs/hermes/{i.h16}", ALL_PROJECT),
    "ref-dangling": Damage(lambda s, i: write(s / "refs/hermes" / i.h16, b"1" * 40 + b"\n"),
                           lambda i: f"refs/hermes/{i.h16}", READS),
    "packed-refs-garbage": Damage(lambda s, i: write(s / "packed-refs", b"garbage\n\0zz\n"),
                                  lambda i: "packed-refs", READS - {"label"}),
    "label-ref-garbage": Damage(
        lambda s, i: write(s / "refs/rewind/labels" / i.h16 / "lab0", b"zz garbage\n"),
        lambda i: f"refs/rewind/labels/{i.h16}/lab0", LABEL_READS),
    # The index is only a stat cache: every command rebuilds a damaged one and does what
    # it does on a whole store; `rewind check` (run first, alone) reports it.
    "index-garbage": Damage(lambda s, i: write(s / "worktrees" / i.h16 / "index",
                                                os.urandom(300)),
                            lambda i: f"worktrees/{i.h16}/index", must_succeed=EVERY),
    "index-truncated": Damage(lambda s, i: truncate(s / "worktrees" / i.h16 / "index"),
                              lambda i: f"worktrees/{i.h16}/index", must_succeed=EVERY),
    # Any command on the project rewrites the admin dir (all derived from the workdir).
    "admin-dir-commondir": Damage(
        lambda s, i: write(s / "worktrees" / i.h16 / "commondir", b"/nonexistent\n"),
        lambda i: f"worktrees/{i.h16}", must_succeed=EVERY),
    "label-ref-dangling": Damage(
        lambda s, i: write(s / "refs/rewind/labels" / i.h16 / "lab0", b"3" * 40 + b"\n"),
        lambda i: f"refs/rewind/labels/{i.h16}/lab0", LABEL_READS),
    "label-ref-blob": Damage(
        lambda s, i: write(s / "refs/rewind/labels" / i.h16 / "lab0", i.label_blob.encode()),
        lambda i: f"refs/rewind/labels/{i.h16}/lab0", LABEL_READS),
    # The notes of proj (agent state, actions, the modes a restore recorded): the issue's
    # case first, a notes ref pointing at a blob.
    "notes-ref-blob": Damage(
        lambda s, i: write(s / "refs/notes/rewind" / i.h16, i.note_blob.encode() + b"\n"),
        lambda i: f"refs/notes/rewind/{i.h16}", {"check"}),
    "notes-ref-garbage": Damage(
        lambda s, i: write(s / "refs/notes/rewind" / i.h16, b"zz garbage\n"),
        lambda i: f"refs/notes/rewind/{i.h16}", {"check"}),
    "notes-ref-dangling": Damage(
        lambda s, i: write(s / "refs/notes/rewind" / i.h16, b"2" * 40 + b"\n"),
        lambda i: f"refs/notes/rewind/{i.h16}", {"check"}),
    "notes-tree-missing": Damage(lambda s, i: loose(s, i.notes_tree).unlink(),
                                 lambda i: OBJECT.format(i.notes_tree[:2], i.notes_tree[2:]),
                                 {"check"}),
    "note-blob-truncated": Damage(lambda s, i: truncate(loose(s, i.note_blob)),
                                  lambda i: OBJECT.format(i.note_blob[:2], i.note_blob[2:]),
                                  {"check"}),
    "store-HEAD-garbage": Damage(lambda s, i: write(s / "HEAD", b"garbage\n"),
                                 lambda i: "HEAD", {"check"}),
    "config-garbage": Damage(lambda s, i: write(s / "config", b"[core\n\tbare = tr\0ue\n"),
                             lambda i: "config", ALL_PROJECT | {"status", "prune"}),
    "shallow-garbage": Damage(lambda s, i: write(s / "shallow", b"garbage\n"),
                              lambda i: "shallow", ALL_PROJECT | {"status", "prune"}),
    "commit-truncated": Damage(lambda s, i: truncate(loose(s, i.tip)),
                               lambda i: OBJECT.format(i.tip[:2], i.tip[2:]),
                               READS),
    "commit-empty": Damage(lambda s, i: truncate(loose(s, i.tip), 0),
                           lambda i: OBJECT.format(i.tip[:2], i.tip[2:]),
                           READS),
    # The middle checkpoint: the history breaks there (store.history.breaks); list and
    # show 1 read what is before and past it with a warning, 2 is the damaged one.
    "commit-flipped": Damage(lambda s, i: flip(loose(s, i.chain[1]), 0.5),
                             lambda i: OBJECT.format(i.chain[1][:2], i.chain[1][2:]),
                             {"restore", "diff", "check"}),
    "tree-truncated": Damage(lambda s, i: truncate(loose(s, i.tree)),
                             lambda i: OBJECT.format(i.tree[:2], i.tree[2:]),
                             {"diff-label", "check"}),
    "blob-truncated": Damage(lambda s, i: truncate(loose(s, i.blob)),
                             lambda i: OBJECT.format(i.blob[:2], i.blob[2:]),
                             {"diff-label", "check"}),
    "blob-flipped": Damage(lambda s, i: flip(loose(s, i.blob), 0.6),
                           lambda i: OBJECT.format(i.blob[:2], i.blob[2:]),
                           {"diff-label", "check"}),
    "commit-missing": Damage(lambda s, i: loose(s, i.chain[1]).unlink(),
                             lambda i: OBJECT.format(i.chain[1][:2], i.chain[1][2:]), {"check"}),
    "tree-missing": Damage(lambda s, i: loose(s, i.label_tree).unlink(),
                           lambda i: OBJECT.format(i.label_tree[:2], i.label_tree[2:]),
                           {"diff-label", "restore-label", "check"}),
    "blob-missing": Damage(lambda s, i: loose(s, i.label_blob).unlink(),
                           lambda i: OBJECT.format(i.label_blob[:2], i.label_blob[2:]),
                           {"diff-label", "restore-label", "check"},
                           may_be_incomplete={"restore-label"}),
    "pack-truncated": Damage(lambda s, i: truncate(pack(s, "pack")),
                             lambda i: "objects/pack/pack-", READS,
                             packed=True),
    "pack-flipped": Damage(lambda s, i: flip_packed(s, i.label_blob),
                           lambda i: "objects/pack/pack-", {"restore-label", "check"},
                           may_be_incomplete={"restore-label"}, packed=True),
    "idx-truncated": Damage(lambda s, i: truncate(pack(s, "idx")),
                            lambda i: "objects/pack/pack-", READS,
                            packed=True),
    "idx-garbage": Damage(lambda s, i: write(pack(s, "idx"), os.urandom(2000)),
                          lambda i: "objects/pack/pack-", READS,
                          packed=True),
    # Journal readers skip a line they cannot parse (a killed writer leaves one): the
    # restore recorded before it can still be undone, and check reports the line.
    "restores-journal-not-utf8": Damage(
        lambda s, i: append(s / "worktrees" / i.h16 / "restores.jsonl", b"\xff\xfe{\n"),
        lambda i: f"worktrees/{i.h16}/restores.jsonl", must_succeed=EVERY, check="reported"),
    "restores-journal-garbage": Damage(
        lambda s, i: append(s / "worktrees" / i.h16 / "restores.jsonl", b'[1, 2]\n{"x"\n'),
        lambda i: f"worktrees/{i.h16}/restores.jsonl", must_succeed=EVERY, check="reported"),
    "project-record-garbage": Damage(lambda s, i: write(s / "projects" / f"{i.h16}.json",
                                                         b"{garbage"),
                                     lambda i: f"projects/{i.h16}.json", {"check"}),
    "project-record-not-utf8": Damage(lambda s, i: write(s / "projects" / f"{i.h16}.json",
                                                          b'{"workdir": "\xff\xfe"}'),
                                      lambda i: f"projects/{i.h16}.json", {"check"}),
    "steps-log-garbage": Damage(lambda s, i: write(s / "steps" / f"{i.h16}.jsonl", b"\xff{\n["),
                                lambda i: f"steps/{i.h16}.jsonl", must_succeed=EVERY,
                                check="reported"),
}


def prepare(template: Template, case: Path, damage: Damage | None) -> tuple[Path, Ids]:
    """A copy of the template's store under `case`, with `damage` done to it (None: whole);
    the project put back as the template left it. The ids are the template's: asking
    git for them again in each copy was ~10 git processes a copy."""
    home = case / "home"
    shutil.copytree(template.root / "home", home, symlinks=True)
    shutil.rmtree(template.project)
    shutil.copytree(template.root / "proj-pristine", template.project, symlinks=True)
    if damage is not None:
        damage.apply(home / "checkpoints" / "store", template.ids)
    return home, template.ids


