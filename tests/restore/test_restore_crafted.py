"""A stored tree is data, not trust (issue 11): checkpoints whose trees name `..`, a name
holding `/`, a nested `sub/../..` or `.git` (also as HFS+/NTFS read it) are refused whole by
restore, `restore --to`, `--dry-run` and undo, with one line naming the entry; nothing is
written anywhere; the mount does not show such names.

The trees are written with `git hash-object -t tree --literally`, as a hostile store
writer would.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from conftest import force_unmount, isolated_git_env
from test_restore_helpers import checkpoint, one_line_error, picture, ref_tip, write

from rewindfs.store import project_hash


def git(store_dir, *args: str, data: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], input=data, capture_output=True, check=True,
                          env=isolated_git_env(GIT_DIR=str(store_dir),
                                               GIT_AUTHOR_NAME="x", GIT_AUTHOR_EMAIL="x@x",
                                               GIT_COMMITTER_NAME="x", GIT_COMMITTER_EMAIL="x@x"))
    return proc.stdout.decode().strip()


def blob(store_dir, data: bytes) -> str:
    return git(store_dir, "hash-object", "-w", "--stdin", data=data)


def tree(store_dir, entries: list[tuple[str, bytes, str]]) -> str:
    """A tree object with exactly these (mode, name, id) entries, names unchecked."""
    raw = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(oid)
                   for mode, name, oid in entries)
    return git(store_dir, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=raw)


def crafted_checkpoint(store_dir, project, bad: list[tuple[str, bytes, str]]) -> str:
    """The newest checkpoint of `project`: its files plus the `bad` entries at the root."""
    tip = ref_tip(store_dir, project)
    good = git(store_dir, "ls-tree", tip).splitlines()
    entries = []
    for line in good:
        meta, name = line.split("\t", 1)
        mode, _, oid = meta.split()
        entries.append((mode, name.encode(), oid))
    commit = git(store_dir, "commit-tree", tree(store_dir, entries + bad), "-p", tip,
                 "-m", "crafted")
    git(store_dir, "update-ref", f"refs/hermes/{project_hash(project)}", commit)
    return commit


def escaping(store_dir) -> dict[str, tuple[list[tuple[str, bytes, str]], str]]:
    """name -> (root entries, the path the refusal must name)."""
    payload = blob(store_dir, b"written by a crafted checkpoint\n")
    config = blob(store_dir, b"[core]\n\tfsmonitor = touch /tmp/pwned\n")
    file_tree = tree(store_dir, [("100644", b"escaped.txt", payload)])
    up_up = tree(store_dir, [("40000", b"..", file_tree)])
    nested = tree(store_dir, [("40000", b"..", up_up)])  # sub/../../escaped.txt
    dotgit = tree(store_dir, [("100644", b"config", config)])
    return {
        "slash in name": ([("100644", b"../escaped.txt", payload)], "../escaped.txt"),
        "dotdot dir": ([("40000", b"..", file_tree)], ".."),
        "nested dotdot": ([("40000", b"sub", nested)], "sub/.."),
        "dot": ([("40000", b".", file_tree)], "."),
        ".git": ([("40000", b".git", dotgit)], ".git"),
        ".GIT": ([("40000", b".GIT", dotgit)], ".GIT"),
        "ntfs .git": ([("40000", b".git. ", dotgit)], ".git. "),
        "ntfs git~1": ([("40000", b"GIT~1", dotgit)], "GIT~1"),
        "hfs .git": ([("40000", ".g\u200cit".encode(), dotgit)], ".g\u200cit"),
    }


CASES = ["slash in name", "dotdot dir", "nested dotdot", "dot", ".git", ".GIT", "ntfs .git",
         "ntfs git~1", "hfs .git"]


@pytest.fixture
def victim(tmp_path, mgr, project, git_repo_factory):
    """A project with a real .git, a checkpoint of it, and the directory around it."""
    git_repo_factory(project, {"README.md": b"# sample\n"})
    checkpoint(mgr, project, "genuine")
    (project / "README.md").write_text("edited since\n")
    return tmp_path


def outside_picture(root, project):
    return {k: v for k, v in picture(root).items()
            if not k.startswith(b"proj/") and not k.startswith(b"hermes-home")
            and not k.startswith(b"user-home")}


@pytest.mark.parametrize("case", CASES)
def test_restore_refuses_a_crafted_tree(case, victim, project, store_dir, run_rewind):
    entries, named = escaping(store_dir)[case]
    commit = crafted_checkpoint(store_dir, project, entries)
    before, around = picture(project), outside_picture(victim, project)
    for args in (["restore", commit[:10], "--yes"], ["restore", commit[:10], "--dry-run"],
                 ["restore", commit[:10], "README.md", "--yes"]):
        proc = run_rewind(*args, cwd=project)
        line = one_line_error(proc)
        assert proc.returncode == 1, (args, proc.stdout, line)
        assert repr(named) in line and "unsafe" in line, line
        assert picture(project) == before, args
        assert outside_picture(victim, project) == around, args
        assert ref_tip(store_dir, project) == commit, "a refused restore took a snapshot"
    assert not os.path.exists("/tmp/pwned")


@pytest.mark.parametrize("case", ["slash in name", "nested dotdot", ".git"])
def test_export_refuses_a_crafted_tree(case, victim, project, store_dir, run_rewind, tmp_path):
    entries, named = escaping(store_dir)[case]
    commit = crafted_checkpoint(store_dir, project, entries)
    around = outside_picture(victim, project)
    for extra in ([], ["--dry-run"]):
        dest = tmp_path / "export" / "here"
        proc = run_rewind("restore", commit[:10], "--to", str(dest), *extra, cwd=project)
        assert proc.returncode == 1
        assert repr(named) in one_line_error(proc)
        assert not (tmp_path / "export").exists()
        assert outside_picture(victim, project) == around


def test_undo_refuses_a_crafted_pre_rollback(victim, project, store_dir, run_rewind, home):
    entries, named = escaping(store_dir)["nested dotdot"]
    commit = crafted_checkpoint(store_dir, project, entries)
    journal = home / "checkpoints/store/worktrees" / project_hash(project) / "restores.jsonl"
    journal.write_text(json.dumps({"target": commit, "pre_rollback": commit,
                                   "touched": ["README.md", "sub/../../escaped.txt"],
                                   "kind": "restore", "time": time.time(),
                                   "created_dirs": []}) + "\n")
    before, around = picture(project), outside_picture(victim, project)
    proc = run_rewind("undo", cwd=project)
    assert proc.returncode == 1
    assert repr(named) in one_line_error(proc)
    assert picture(project) == before
    assert outside_picture(victim, project) == around


def test_api_refuses_a_crafted_tree(victim, mgr, project, store_dir):
    entries, named = escaping(store_dir)[".git"]
    commit = crafted_checkpoint(store_dir, project, entries)
    before = picture(project)
    out = mgr.restore(str(project), commit)
    assert out["success"] is False
    assert repr(named) in out["error"] and "\n" not in out["error"]
    assert picture(project) == before


def test_a_genuine_checkpoint_still_restores(mgr, project, run_rewind):
    write(project, {".gitignore": "x\n", ".github/workflows/ci.yml": "on: push\n",
                    "git~2": "fine\n", ".gitx": "fine\n", "...": "three dots\n"})
    cp = checkpoint(mgr, project, "odd but safe names")
    expected = picture(project)
    for rel in (".gitignore", ".github/workflows/ci.yml", "git~2", ".gitx", "..."):
        (project / rel).unlink()
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert picture(project) == expected


def test_mount_does_not_show_unsafe_names(victim, project, store_dir, run_rewind, tmp_path):
    cases = escaping(store_dir)
    bad = [entry for case in ("slash in name", "dotdot dir", ".git", "ntfs .git", "hfs .git")
           for entry in cases[case][0]]
    crafted_checkpoint(store_dir, project, bad)
    mnt = tmp_path / "mnt"
    proc = run_rewind("mount", str(mnt))
    assert proc.returncode == 0, proc.stderr
    try:
        latest = mnt / "proj" / "latest"
        shown = sorted(os.listdir(latest))
        assert shown == ["README.md", "docs", "src"], shown
        assert not os.path.exists(latest / ".git")
        assert not os.path.exists(latest / ".git. ")
        assert (latest / "README.md").read_text() == "# sample\n"
        # `find` walks it without ever leaving it
        found = subprocess.run(["find", str(latest)], capture_output=True, text=True,
                               timeout=60)
        assert found.returncode == 0, found.stderr
        assert all(line.startswith(str(latest)) for line in found.stdout.splitlines())
        assert "escaped.txt" not in found.stdout and "config" not in found.stdout
    finally:
        force_unmount(mnt)
