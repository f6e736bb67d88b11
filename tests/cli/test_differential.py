"""Every read command against git itself (issue 32): on stores written loose, repacked by
git, written partly by upstream Hermes, holding a history longer than a screen, and full
of odd names, what `rewind` shows and acts on is what git says the store holds.

git is the witness: the chain is `git rev-list --first-parent` of the project's ref (git
honours the prune boundary in `shallow` as rewindfs does), a file is `git show ID:PATH`,
a difference `git diff`, a search `git grep`. The numbering rule is the spec's: newest
first, pre-rollback snapshots unnumbered unless labelled, then labelled checkpoints
pruned out of the chain, newest commit first and ties by id. Each fixture proves its
shape (loose objects, one pack with deltas, Hermes commits without trailers, more rows
than a screen, names git must quote) before the commands run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pygit2
import pytest
from conftest import isolated_git_env

from rewindfs.cli.output import listing
from rewindfs.store import Layout, project_hash, set_label, take

PRE_TRAILER = "Rewind-Restore-Target"
WORD = "needle"


class Witness:
    """git on the store, for one project."""

    def __init__(self, store: Path, project: Path):
        self.store, self.project = store, project
        self.ref = Layout.project_ref(project_hash(project))

    def git(self, *args: str, raw: bool = False, found: bool = False):
        """git's output; `found`: exit 1 means none found (grep), not a failure."""
        done = subprocess.run(["git", *args], env=isolated_git_env(GIT_DIR=str(self.store)),
                              capture_output=True, timeout=60)
        if done.returncode and not (found and done.returncode == 1):
            raise AssertionError(f"git {' '.join(args)}: {done.stderr.decode()}")
        return done.stdout if raw else done.stdout.decode()

    def chain(self) -> list[str]:
        return self.git("rev-list", "--first-parent", self.ref).split()

    def subject(self, commit: str) -> str:
        return self.git("log", "-1", "--format=%s", commit).strip()

    def pre_rollback(self, commit: str) -> bool:
        body = self.git("log", "-1", "--format=%B", commit)
        return PRE_TRAILER + ":" in body or self.subject(commit).startswith(
            "pre-rollback snapshot")

    def labels(self) -> dict[str, list[str]]:
        prefix = f"refs/rewind/labels/{project_hash(self.project)}/"
        out: dict[str, list[str]] = {}
        for line in self.git("for-each-ref", "--format=%(objectname) %(refname)",
                             prefix).splitlines():
            oid, name = line.split(" ", 1)
            out.setdefault(oid, []).append(name[len(prefix):])
        return out

    def numbered(self) -> list[tuple[int, str]]:
        """(number or 0, id) of every listed checkpoint, by the spec's rule."""
        chain, labels = self.chain(), self.labels()
        pinned = [c for c in labels if c not in chain]
        pinned.sort(key=lambda c: (-int(self.git("log", "-1", "--format=%ct", c)), c))
        out, count = [], 0
        for commit in [*chain, *pinned]:
            if not self.pre_rollback(commit) or commit in labels:
                count += 1
                out.append((count, commit))
            else:
                out.append((0, commit))
        return out

    def names(self, command: str, *args: str) -> set[str]:
        out = self.git(command, "-z", *args, raw=True, found=command == "grep")
        return {os.fsdecode(n) for n in out.split(b"\0") if n}


def rewind_json(run_rewind, project: Path, command: str, *args: str):
    done = run_rewind(command, "--json", *args, cwd=project, check=True)
    return json.loads(done.stdout)


def check_every_read_command(run_rewind, project: Path, witness: Witness, files: list[str]):
    """Each read command, against git."""
    want = witness.numbered()
    got = [(e.get("number") or 0, e["hash"]) for e in rewind_json(run_rewind, project, "list")]
    assert got == want
    reasons = {e["hash"]: e["reason"] for e in rewind_json(run_rewind, project, "list")}
    assert all(reasons[c] == witness.subject(c) for _n, c in want)
    numbers = {n: c for n, c in want if n}
    tip = witness.chain()[0]
    for number, commit in sorted(numbers.items())[:3] + sorted(numbers.items())[-2:]:
        shown = rewind_json(run_rewind, project, "show", str(number))
        assert shown["hash"] == commit and shown["reason"] == witness.subject(commit)
        held = witness.names("ls-tree", "-r", "--name-only", commit)
        for rel in [f for f in files if f in held][:4]:
            content = witness.git("show", f"{commit}:{rel}", raw=True)
            done = run_rewind("cat", str(number), "--", rel, cwd=project, check=True)
            assert done.stdout.encode("utf-8", "surrogateescape") == content, rel
        found = {(e["path"]) for e in rewind_json(run_rewind, project, "grep", "-F", WORD,
                                                  str(number))}
        assert found == {n.partition(":")[2] for n in witness.names("grep", "-l", "-F", WORD,
                                                                    commit)}
        changed = run_rewind("diff", str(number), "1", "--name-only", cwd=project, check=True)
        assert set(changed.stdout.splitlines()) == {
            quoted(n) for n in witness.names("diff", "--name-only", commit, tip)}
        plan = rewind_json(run_rewind, project, "restore", "--dry-run", str(number))["plan"]
        status = witness.git("diff", "-z", "--name-status", "--no-renames", tip, commit,
                             raw=True).split(b"\0")[0::2]
        assert (plan["overwrite"], plan["create"], plan["delete"]) == (
            status.count(b"M"), status.count(b"A"), status.count(b"D")), (number, status)
    for rel in files[:3]:
        logged = [e["hash"] for e in rewind_json(run_rewind, project, "log", "--", rel)]
        touched = witness.git("log", "--first-parent", "--format=%H", witness.ref, "--",
                              rel).split()
        assert [c for c in logged if c in witness.chain()] == touched, rel


def quoted(name: str) -> str:
    """A name as git's (and rewind's) --name-only prints it off -z."""
    from rewindfs.store.history import quote_path

    return quote_path(os.fsencode(name))


def grow(store, project: Path, files: dict[str, str], count: int, reason: str = "step"
         ) -> list[str]:
    """`count` checkpoints, each changing one of `files` (and the needle in some)."""
    names = list(files)
    made = []
    for i in range(count):
        rel = names[i % len(names)]
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        extra = f" {WORD}" if i % 3 == 0 else ""
        path.write_text(f"{files[rel]} {i}{extra}\n")
        made.append(take(store, project, f"{reason} {i}").commit)
    return made


FILES = {"a.txt": "alpha", "src/b.py": "beta", "docs/c.md": "gamma"}
ODD = {"with space.txt": "one", "ünïcödé/ß.txt": "two", "-leading-dash": "three",
       'quote"d.txt': "four", "tab\tname.txt": "five", "emoji-😀.md": "six"}


@pytest.fixture
def loose_store(store, project, run_rewind):
    ids = grow(store, project, FILES, 6)
    set_label(store, project_hash(project), "v1.0", ids[2])
    (project / "a.txt").write_text("edited, never a checkpoint\n")
    run_rewind("restore", "3", "--yes", cwd=project, check=True)  # a pre-rollback snapshot
    grow(store, project, FILES, 2, reason="after")
    return list(FILES)


def test_loose_store(loose_store, project, store_dir, run_rewind):
    assert any((store_dir / "objects").glob("[0-9a-f][0-9a-f]/*"))  # loose objects there
    check_every_read_command(run_rewind, project, Witness(store_dir, project), loose_store)


def test_packed_store_with_deltas(loose_store, project, store_dir, run_rewind):
    witness = Witness(store_dir, project)
    witness.git("repack", "-a", "-d", "-f", "-q", "--depth=10", "--window=10")
    witness.git("pack-refs", "--all")
    assert not list((store_dir / "objects").glob("[0-9a-f][0-9a-f]/*"))
    verified = witness.git("verify-pack", "-v",
                           str(next((store_dir / "objects" / "pack").glob("*.idx"))))
    assert "chain length" in verified  # deltas in the pack
    check_every_read_command(run_rewind, project, witness, loose_store)


def test_store_written_partly_by_hermes(hcm, store, project, store_dir, run_rewind):
    hermes = hcm.CheckpointManager(enabled=True, max_snapshots=1000)
    for i in range(4):
        (project / "a.txt").write_text(f"hermes {i} {WORD}\n")
        hermes.new_turn()
        assert hermes.ensure_checkpoint(str(project), f"hermes step {i}")
        (project / "src" / "b.py").write_text(f"rewind {i}\n")
        take(store, project, f"rewind step {i}")
    witness = Witness(store_dir, project)
    bare = [c for c in witness.chain() if "Rewind-" not in witness.git(
        "log", "-1", "--format=%B", c)]
    assert len(bare) >= 4  # Hermes's own commits: no trailers, no recorded stats
    check_every_read_command(run_rewind, project, witness, ["a.txt", "src/b.py"])


def test_history_longer_than_a_screen(store, project, store_dir, run_rewind):
    grow(store, project, FILES, 3)
    repo = pygit2.Repository(str(store_dir))
    ref = Layout.project_ref(project_hash(project))
    tip = repo.references[ref].target
    for i in range(listing.EXACT_ROWS + 40):  # long, as a long session leaves it
        tree = repo[tip].peel(pygit2.Commit).tree
        blob = repo.create_blob(f"long {i} {WORD if i % 50 == 0 else ''}\n".encode())
        builder = repo.TreeBuilder(tree)
        builder.insert("a.txt", blob, pygit2.enums.FileMode.BLOB)
        sig = pygit2.Signature("rewindfs", "rewindfs@local", 1_700_000_000 + 60 * i, 0)
        tip = repo.create_commit(None, sig, sig, f"long {i}\n", builder.write(), [tip])
    repo.references.create(ref, tip, force=True)
    (project / "a.txt").write_bytes(repo[tip].peel(pygit2.Commit).tree["a.txt"].data)
    witness = Witness(store_dir, project)
    assert len(witness.chain()) > listing.EXACT_ROWS
    run_rewind("list", cwd=project, check=True)  # the records and their chain summary
    check_every_read_command(run_rewind, project, witness, list(FILES))


def test_odd_names(store, project, store_dir, run_rewind):
    grow(store, project, ODD, 7, reason="odd ✓")
    set_label(store, project_hash(project), "rc-1_x", witness_tip(store_dir, project))
    witness = Witness(store_dir, project)
    assert any('"' in line for line in witness.git("diff", "--name-only", witness.chain()[-1],
                                                    witness.chain()[0]).splitlines())
    check_every_read_command(run_rewind, project, witness, list(ODD))


def witness_tip(store_dir: Path, project: Path) -> str:
    return Witness(store_dir, project).chain()[0]
