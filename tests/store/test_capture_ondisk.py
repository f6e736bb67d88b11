"""Capture stores what is on disk, whatever else is going on in the working tree: files
rewritten meanwhile, a tree changing under the walk, directories nested deeper than
libgit2 walks, directories it may not enter, a damaged index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2
from conftest import rewind_env

from rewindfs.errors import StoreError
from rewindfs.store import take
from rewindfs.store.objects import heal

REWRITER = r"""
import os, sys
path = sys.argv[1]
i = 0
while True:  # another process of the agent (a build, a logger) rewriting one big file
    with open(path, "wb") as f:  # same size every time: git must hash it to see a change
        f.write(bytes([i % 251]) * 1_000_000)
    i += 1
"""


def blob_of(store_dir: Path, commit: str, rel: str) -> bytes | None:
    repo = pygit2.Repository(str(store_dir))
    tree = repo[commit].peel(pygit2.Commit).tree
    try:
        return repo[tree[rel].id].data
    except KeyError:
        return None


def test_stable_file_is_stored_while_another_keeps_changing(store, project, store_dir):
    """A file finished moments before the checkpoint is stored as it is (not its
    previous version, not "unreadable"); a file rewritten throughout is either stored
    as one whole version or reported as changing."""
    big = project / "big.bin"
    big.write_bytes(b"\0" * 1_000_000)
    take(store, project, "first")
    writer = subprocess.Popen([sys.executable, "-c", REWRITER, str(big)])
    try:
        for i in range(8):
            text = f"edit {i}\n" * (i + 1)
            (project / "notes.txt").write_text(text)
            time.sleep(0.2)
            result = take(store, project, f"round {i}")
            assert result.taken
            assert blob_of(store_dir, result.commit, "notes.txt") == text.encode(), i
            skipped = result.skipped_files
            assert "notes.txt" not in skipped.get("unreadable", []), skipped
            assert set(skipped) <= {"changing"}, skipped
            stored = blob_of(store_dir, result.commit, "big.bin")
            if "big.bin" not in skipped.get("changing", []):
                # one whole version (an empty file too: caught between truncate and write)
                assert stored is not None and len(set(stored)) <= 1, "a torn version"
    finally:
        writer.kill()
        writer.wait()


CHURN = r"""
import shutil, sys, time
from pathlib import Path
root = Path(sys.argv[1])
i = 0
while True:  # files deleted and recreated (same size), directories regenerated
    f = root / "tracked" / f"f{i % 200}.txt"
    f.unlink(missing_ok=True)
    time.sleep(0.0002)
    f.write_bytes(b"yz"[i % 2:i % 2 + 1] * 4000)
    if i % 40 == 0:
        shutil.rmtree(root / "gen", ignore_errors=True)
        for k in range(30):
            d = root / "gen" / str(k % 4)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"g{k}.txt").write_text("g" * (k + 1))
    i += 1
"""


def test_tree_changing_during_capture_never_fails_the_checkpoint(store, project):
    (project / "tracked").mkdir()
    for i in range(200):
        (project / "tracked" / f"f{i}.txt").write_bytes(b"x" * 4000)
    take(store, project, "first")
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(project)])
    errors = []
    try:
        for i in range(25):
            try:
                take(store, project, f"churning {i}")
            except StoreError as exc:
                errors.append(str(exc))
    finally:
        churn.kill()
        churn.wait()
    assert errors == []


def nest(root: Path, depth: int) -> Path:
    path = root
    for _ in range(depth):
        path = path / "d"
    path.mkdir(parents=True)
    return path


def test_nesting_deeper_than_libgit2_walks_skips_only_that(store, project, store_dir,
                                                           run_rewind, files_of):
    deep = nest(project, 105)
    (deep / "bottom.txt").write_text("too deep\n")
    (project / "d" / "d" / "shallow.txt").write_text("fine\n")
    proc = run_rewind("checkpoint", project, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["taken"]
    cut = "d/" * 100
    assert out["skipped_files"] == {"too_deep": [cut]}
    files = files_of(out["hash"])
    assert b"d/d/shallow.txt" in files and b"README.md" in files
    assert not any(name.endswith(b"bottom.txt") for name in files)
    # later checkpoints keep saying so, and keep working
    (project / "README.md").write_text("changed\n")
    proc = run_rewind("checkpoint", project)
    assert proc.returncode == 0, proc.stderr
    assert "nested too deep" in proc.stderr and cut in proc.stderr


def largest_writable_mapping() -> int:
    """The size of this process's largest private writable mapping: what fork(2) must
    account for (the kernel refuses to copy one larger than memory)."""
    largest = 0
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, perms = line.split()[:2]
        if perms.startswith("rw") and perms.endswith("p"):
            lo, hi = (int(x, 16) for x in span.split("-"))
            largest = max(largest, hi - lo)
    return largest


def test_damaged_index_is_rebuilt(store, project, store_dir, fsck):
    first = take(store, project, "first")
    index = store_dir / "worktrees" / first.project / "index"
    # a header counting 0x67617262 entries ("garb"): libgit2 would size its tables by it
    index.write_bytes(b"DIRC\0\0\0\2garbage" * 10)
    (project / "README.md").write_text("after the damage\n")
    second = take(store, project, "second")
    assert second.taken
    # nothing sized by the damaged count (libgit2 reserved 32.5 GiB, for as long as the
    # store stayed open, and every fork of the process failed meanwhile)
    assert largest_writable_mapping() < 1 << 30
    assert blob_of(store_dir, second.commit, "README.md") == b"after the damage\n"
    third = take(store, project, "third")  # the rebuilt index is a working stat cache
    assert not third.taken
    fsck()


def test_damaged_object_is_rewritten_by_the_next_checkpoint(store, project, store_dir, fsck,
                                                            run_rewind):
    """An object found damaged (listed by `rewind check --repair`) that the working tree
    still holds is written again by the next checkpoint, and git fsck is clean again."""
    first = take(store, project, "first")
    repo = pygit2.Repository(str(store_dir))
    blob = repo[first.commit].peel(pygit2.Commit).tree["README.md"].id
    loose = store_dir / "objects" / str(blob)[:2] / str(blob)[2:]
    os.chmod(loose, 0o644)
    loose.write_bytes(b"x\x9c damaged beyond repair")
    assert subprocess.run(["git", "--git-dir", str(store_dir), "fsck"],
                          capture_output=True).returncode != 0
    assert run_rewind("check").returncode == 3
    assert not store.layout.damaged_objects.exists()  # a check without --repair writes nothing
    repair = run_rewind("check", "--repair")
    assert repair.returncode == 3 and "listed 1 damaged object(s)" in repair.stdout, repair.stdout
    assert store.layout.damaged_objects.read_text() == f"{blob}\n"
    heal.note(store.layout, ["0" * 40])  # an id no working tree holds
    second = take(store, project, "second")
    assert not second.taken  # same files: the same tree, now whole
    assert pygit2.Repository(str(store_dir))[blob].data == (project / "README.md").read_bytes()
    fsck()
    assert run_rewind("check").returncode == 0
    # what the working tree does not hold stays listed for `rewind check` to report
    assert store.layout.damaged_objects.read_text() == "0" * 40 + "\n"


NOBODY = r"""
import json, sys
from pathlib import Path
import pygit2
from rewindfs.store import Layout, Store, take
r = take(Store(Layout(Path(sys.argv[1]))), sys.argv[2], "as nobody")
repo = pygit2.Repository(sys.argv[1] + "/store")
def paths(tree, prefix=""):
    for e in tree:
        if e.type_str == "tree":
            yield from paths(repo[e.id], prefix + e.name + "/")
        else:
            yield prefix + e.name
files = sorted(paths(repo[r.commit].peel(pygit2.Commit).tree)) if r.commit else []
print(json.dumps({"taken": r.taken, "skipped": r.skipped_files, "files": files}))
"""


def test_unreadable_directory_is_reported(files_of, as_nobody):
    top = Path(tempfile.mkdtemp(prefix="rewind-nobody-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        proj = top / "proj"
        (proj / "ok").mkdir(parents=True)
        (proj / "ok" / "a.txt").write_text("readable\n")
        (proj / "locked" / "inner").mkdir(parents=True)
        (proj / "locked" / "inner" / "s.txt").write_text("hidden\n")
        (top / "hermes").mkdir()
        for dirpath, dirnames, filenames in os.walk(top):
            for name in [".", *dirnames, *filenames]:
                os.chown(os.path.join(dirpath, name), 65534, 65534)
        env = rewind_env(None, top)

        def take_as_nobody() -> dict:
            proc = subprocess.run(
                [*as_nobody, sys.executable, "-c", NOBODY, str(top / "hermes" / "checkpoints"),
                 str(proj)], capture_output=True, text=True, env=env, timeout=60)
            assert proc.returncode == 0, proc.stderr
            return json.loads(proc.stdout)

        # a directory that is unreadable from the start: reported, not silently left out
        os.chmod(proj / "locked", 0)
        out = take_as_nobody()
        assert out["taken"]
        assert out["skipped"] == {"unreadable": ["locked/"]}
        assert out["files"] == ["ok/a.txt"]
        # one that becomes unreadable after its files were captured: they are kept
        os.chmod(proj / "locked", 0o755)
        assert take_as_nobody()["files"] == ["locked/inner/s.txt", "ok/a.txt"]
        os.chmod(proj / "locked", 0)
        (proj / "ok" / "b.txt").write_text("new\n")
        os.chown(proj / "ok" / "b.txt", 65534, 65534)
        out = take_as_nobody()
        assert out["skipped"] == {"unreadable": ["locked/inner/s.txt"]}
        assert out["files"] == ["locked/inner/s.txt", "ok/a.txt", "ok/b.txt"]
    finally:
        os.chmod(top / "proj" / "locked", 0o755)
        shutil.rmtree(top, ignore_errors=True)
