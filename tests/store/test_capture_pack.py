"""First (and large) checkpoints: objects written as packs instead of loose files.

What a packed capture must keep: byte-exact content and git's own tree for the same
files, a stat cache the next checkpoint hits, no checkpoint referring to a missing
object whenever the process dies, concurrent first checkpoints, Hermes reading and
restoring from the packs, and a refused checkpoint writing nothing at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from conftest import isolated_git_env

from rewindfs.errors import Refused
from rewindfs.store import Layout, Limits, Store, project_hash, take
from rewindfs.store.capture.storing import LOOSE_MAX_FILES

MANY = 3 * LOOSE_MAX_FILES  # enough files for the packed path


def make_project(root: Path, n: int = MANY, tag: str = "") -> dict[str, bytes]:
    """n text files in a few directories, plus the special cases; rel path -> content."""
    files: dict[str, bytes] = {}
    for i in range(n):
        rel = f"d{i % 7}/sub{i % 3}/f{i}.txt"
        files[rel] = f"{tag} file {i}\n".encode() * (1 + i % 50)
    files["empty.txt"] = b""
    files["bin/blob.bin"] = bytes(range(256)) * 40
    files["run.sh"] = b"#!/bin/sh\necho hi\n"
    files["caf\xe9.txt".encode("latin-1").decode("utf-8", "surrogateescape")] = b"latin-1 name\n"
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.chmod(root / "run.sh", 0o755)
    os.symlink("d0/sub0/f0.txt", root / "link")
    return files


def loose_objects(store_dir: Path) -> list[Path]:
    objects = store_dir / "objects"
    return [p for p in objects.glob("??/*") if p.is_file()]


def packs(store_dir: Path) -> list[Path]:
    return sorted((store_dir / "objects" / "pack").glob("pack-*.pack"))


def tree_files(repo: pygit2.Repository, tree: pygit2.Tree, prefix: bytes = b"") -> dict:
    out = {}
    for entry in tree:
        name = prefix + entry.raw_name
        if entry.filemode == pygit2.enums.FileMode.TREE:
            out.update(tree_files(repo, repo[entry.id], name + b"/"))
        else:
            out[name] = (entry.filemode, repo[entry.id].data)
    return out


def git_tree_of(workdir: Path, tmp_path: Path) -> str:
    """The tree git itself writes for `workdir` (git add -A into a scratch repository)."""
    gitdir = tmp_path / "scratch.git"
    subprocess.run(["git", "init", "-q", "--bare", str(gitdir)], env=isolated_git_env(),
                   check=True)
    env = isolated_git_env(GIT_DIR=str(gitdir), GIT_WORK_TREE=str(workdir))
    subprocess.run(["git", "add", "-A"], env=env, check=True, cwd=workdir)
    return subprocess.run(["git", "write-tree"], env=env, check=True, cwd=workdir,
                          capture_output=True, text=True).stdout.strip()


def test_first_checkpoint_is_packed_and_exact(store, tmp_path, store_dir, fsck, store_git):
    proj = tmp_path / "proj"
    files = make_project(proj)
    result = take(store, proj, "first")
    assert result.taken
    # blobs and trees in packs; only the commit is a loose object
    assert len(packs(store_dir)) == 2
    assert len(loose_objects(store_dir)) == 1
    for pack in packs(store_dir):
        store_git("verify-pack", str(pack.with_suffix(".idx")))
    fsck()
    repo = pygit2.Repository(str(store_dir))
    stored = tree_files(repo, repo[result.commit].peel(pygit2.Commit).tree)
    expected = {os.fsencode(rel): (0o100644, data) for rel, data in files.items()}
    expected[b"run.sh"] = (0o100755, files["run.sh"])
    expected[b"link"] = (0o120000, b"d0/sub0/f0.txt")
    assert stored == expected
    # the very tree git writes for the same files
    assert result.tree == git_tree_of(proj, tmp_path)


def test_stat_cache_hits_after_a_packed_checkpoint(store, tmp_path, store_dir):
    proj = tmp_path / "proj"
    make_project(proj)
    first = take(store, proj, "first")
    index = store_dir / "worktrees" / first.project / "index"
    before = (index.stat().st_mtime_ns, index.read_bytes())
    objects = sorted(p.name for p in (store_dir / "objects").rglob("*"))
    again = take(store, proj, "again")
    assert not again.taken
    # nothing found changed: the index was not even rewritten, no object written
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before
    assert sorted(p.name for p in (store_dir / "objects").rglob("*")) == objects
    # one change: a few loose objects, no new pack
    (proj / "d1" / "sub1" / "f1.txt").write_text("changed\n")
    third = take(store, proj, "third")
    assert third.taken
    assert len(packs(store_dir)) == 2


CRASH = r"""
import os, signal, sys
from pathlib import Path
from rewindfs.store import Layout, Store, take
from rewindfs.store.history import snapshot
from rewindfs.store.objects import packwrite

base, workdir, stage = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
finish, commit = packwrite.PackWriter.finish, snapshot._commit
published = []

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def finish_then_maybe_die(self):
    name = finish(self)
    published.append(name)
    if stage == "blobs" or (stage == "trees" and len(published) == 2):
        die()
    return name

def die_before_commit(*args, **kwargs):
    die()

packwrite.PackWriter.finish = finish_then_maybe_die
if stage == "ref":
    snapshot._commit = die_before_commit
take(Store(Layout(base)), workdir, "dies")
"""


@pytest.mark.parametrize("stage", ["blobs", "trees", "ref"])
def test_killed_between_pack_and_ref(stage, home, tmp_path, store_dir, store, fsck):
    """SIGKILL after the blob pack, after the tree pack, or with the index written but
    the ref not moved: no checkpoint refers to a missing object, and the next
    checkpoint takes everything."""
    proj = tmp_path / "proj"
    files = make_project(proj)
    proc = subprocess.run([sys.executable, "-c", CRASH, str(home / "checkpoints"), str(proj),
                           stage], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    repo = pygit2.Repository(str(store_dir))
    assert repo.references.get(f"refs/hermes/{project_hash(proj)}") is None
    fsck()
    result = take(store, proj, "after the crash")
    assert result.taken
    fsck()
    stored = tree_files(repo, repo[result.commit].peel(pygit2.Commit).tree)
    assert {k: v[1] for k, v in stored.items() if k != b"link"} == \
        {os.fsencode(rel): data for rel, data in files.items()}


TAKE = r"""
import json, sys, time
from pathlib import Path
from rewindfs.store import Layout, Store, take
base, workdir, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
r = take(Store(Layout(base)), workdir, "concurrent first")
print(json.dumps({"taken": r.taken, "commit": r.commit}))
"""


def test_concurrent_first_checkpoints_of_two_projects(home, tmp_path, store_dir, fsck, store):
    projects = [tmp_path / "one", tmp_path / "two"]
    contents = [make_project(p, tag=p.name) for p in projects]
    store.ensure()
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", TAKE, str(home / "checkpoints"), str(p),
                               str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for p in projects]
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        assert json.loads(out)["taken"]
    fsck()
    repo = pygit2.Repository(str(store_dir))
    for proj, files in zip(projects, contents, strict=True):
        tip = repo.references[f"refs/hermes/{project_hash(proj)}"].peel(pygit2.Commit)
        stored = tree_files(repo, tip.tree)
        assert {k: v[1] for k, v in stored.items() if k != b"link"} == \
            {os.fsencode(rel): data for rel, data in files.items()}
    assert len(packs(store_dir)) == 4


def test_max_files_refusal_writes_no_objects(store, tmp_path, store_dir):
    proj = tmp_path / "proj"
    make_project(proj)
    with pytest.raises(Refused):
        take(store, proj, "too many", limits=Limits(max_files=MANY // 2))
    assert loose_objects(store_dir) == []
    assert list((store_dir / "objects" / "pack").glob("*")) == []


def test_hermes_restores_a_checkpoint_from_a_fresh_pack(home, tmp_path, hcm, store_dir):
    proj = tmp_path / "proj"
    files = make_project(proj)
    ours = take(Store(Layout(home / "checkpoints")), proj, "packed by rewindfs")
    assert ours.taken and len(packs(store_dir)) == 2
    hermes = hcm.CheckpointManager(enabled=True)
    listed = hermes.list_checkpoints(str(proj))
    assert [c["hash"] for c in listed] == [ours.commit]
    # damage the working tree, then let Hermes put it back from our packs
    for rel in list(files)[:20]:
        (proj / rel).write_text("clobbered\n")
    (proj / "d3" / "sub0" / "f3.txt").unlink()
    out = hermes.restore(str(proj), ours.commit)
    assert out["success"], out
    for rel, data in files.items():
        assert (proj / rel).read_bytes() == data, rel
