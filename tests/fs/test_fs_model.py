"""The browsable model, called directly (no kernel): layout, numbering, exact trees,
shared inodes, metadata, live refresh, bounded memory and surviving git gc."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pygit2
import pytest

from rewindfs.errors import NotFound, StoreDamaged
from rewindfs.fs.cache import LruCache
from rewindfs.fs.model import Model
from rewindfs.fs.nodes.node import Directory, File, Node, Symlink
from rewindfs.store import Layout, project_hash, set_label, take

STABLE_NAME = re.compile(rb"^\d{4}-\d\d-\d\dT\d{6}-[0-9a-f]{8}$")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def model(layout: Layout, clock: FakeClock) -> Model:
    return Model(layout, clock=clock)


def names(directory: Node) -> set[bytes]:
    assert isinstance(directory, Directory)
    return {name for name, _ in directory.entries()}


def walk(directory: Directory, prefix: bytes = b"") -> dict[bytes, Node]:
    out: dict[bytes, Node] = {}
    for name, node in directory.entries():
        path = prefix + name
        if isinstance(node, Directory):
            out.update(walk(node, path + b"/"))
        else:
            out[path] = node
    return out


def rich_project(root: Path) -> None:
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_bytes(b"#!/bin/sh\necho hi\n")
    (root / "bin" / "tool").chmod(0o755)
    (root / "link-to-readme").symlink_to("README.md")
    (root / "dangling").symlink_to("../nowhere/at all")
    (root / "empty.txt").write_bytes(b"")
    (root / "data.bin").write_bytes(bytes(range(256)) * 300)


# -- layout and numbering -------------------------------------------------------------


def test_project_directory_named_after_workdir(store, project, model):
    take(store, project, "first")
    assert names(model.root) == {b"proj"}
    assert model.resolve("proj").xattrs() == {b"user.rewind.workdir": os.fsencode(str(project))}


def test_numbers_and_latest_point_at_stable_names(store, project, model):
    commits = []
    for i in range(3):
        (project / "README.md").write_text(f"version {i}\n")
        commits.append(take(store, project, f"edit {i}").commit)
    listing = dict(model.resolve("proj").entries())
    stable = {n for n in listing if STABLE_NAME.match(n)}
    assert len(stable) == 3 and all(b":" not in n for n in stable)
    assert set(listing) == stable | {b"1", b"2", b"3", b"latest"}
    for number, commit in zip((b"1", b"2", b"3"), reversed(commits), strict=True):
        link = listing[number]
        assert isinstance(link, Symlink)
        assert link.target().endswith(commit[:8].encode())
        assert model.resolve(b"proj/" + number + b"/").xattrs()[b"user.rewind.hash"] == \
            commit.encode()
    assert listing[b"latest"].target() == listing[b"1"].target()
    assert model.resolve("proj/latest/README.md").data() == b"version 2\n"


def test_colliding_basenames_get_hash_suffix(store, tmp_path, model):
    a, b = tmp_path / "one" / "app", tmp_path / "two" / "app"
    for d in (a, b):
        d.mkdir(parents=True)
        (d / "f.txt").write_text(str(d))
        take(store, d, "first")
    expected = {f"app-{project_hash(d)[:8]}".encode(): d for d in (a, b)}
    assert names(model.root) == set(expected)
    for name, d in expected.items():
        assert model.resolve(name + b"/1/f.txt").data() == str(d).encode()


def test_projects_without_record_or_workdir_are_shown(store, project, tmp_path, layout, model):
    take(store, project, "first")
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "f.txt").write_text("still here\n")
    take(store, gone, "first")
    (gone / "f.txt").unlink()
    gone.rmdir()  # orphaned: the workdir is deleted, the record stays
    layout.project_record(project_hash(project)).unlink()  # the record itself is lost
    shown = names(model.root)
    assert shown == {b"gone", project_hash(project).encode()}
    assert model.resolve("gone/1/f.txt").data() == b"still here\n"


def test_only_project_shows_just_that_project(store, project, tmp_path, layout):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("x")
    take(store, project, "first")
    take(store, other, "first")
    assert names(Model(layout, only_project=project_hash(project)).root) == {b"proj"}


def test_missing_store_is_an_empty_root(model):
    assert names(model.root) == set()
    with pytest.raises(NotFound):
        model.resolve("proj/1/README.md")


# -- the stored tree, exactly ---------------------------------------------------------


def test_tree_matches_store_bytes_modes_symlinks_sizes(store, project, model, files_of):
    rich_project(project)
    commit = take(store, project, "rich").commit
    stored = files_of(commit)
    shown = walk(model.resolve("proj/1/"))
    assert set(shown) == set(stored)
    for path, (mode, content) in stored.items():
        node = shown[path]
        attrs = node.attributes()
        assert attrs.size == len(content), path
        if mode == pygit2.enums.FileMode.LINK:
            assert isinstance(node, Symlink) and stat.S_ISLNK(attrs.mode)
            assert node.target() == content
        else:
            assert isinstance(node, File) and stat.S_ISREG(attrs.mode)
            assert node.data() == content
            assert node.read(3, 10) == content[3:13]
            want = 0o755 if mode == pygit2.enums.FileMode.BLOB_EXECUTABLE else 0o644
            assert stat.S_IMODE(attrs.mode) == want, path
    assert stat.S_IMODE(shown[b"bin/tool"].attributes().mode) == 0o755
    assert shown[b"dangling"].target() == b"../nowhere/at all"


def test_checkpoint_dir_time_and_xattrs(store, project, model, store_dir):
    commit = take(store, project, "before patch").commit
    set_label(store, project_hash(project), "good", commit)
    node = model.resolve("proj/1/")
    when = pygit2.Repository(str(store_dir))[commit].author.time
    assert node.attributes().mtime_ns == when * 1_000_000_000
    assert model.resolve("proj/1/src").attributes().mtime_ns == when * 1_000_000_000
    xattrs = node.xattrs()
    assert xattrs[b"user.rewind.reason"] == b"before patch"
    assert xattrs[b"user.rewind.hash"] == commit.encode()
    assert xattrs[b"user.rewind.label"] == b"good"
    assert xattrs[b"user.rewind.time"].startswith(b"20")


def test_gitlink_shows_as_empty_directory(store, project, model, store_dir):
    take(store, project, "first")
    repo = pygit2.Repository(str(store_dir))
    ref = repo.references[f"refs/hermes/{project_hash(project)}"]
    head = ref.peel(pygit2.Commit)
    builder = repo.TreeBuilder(head.tree)
    builder.insert("vendored", head.id, pygit2.enums.FileMode.COMMIT)
    sig = pygit2.Signature("t", "t@t")
    new = repo.create_commit(None, sig, sig, "with gitlink\n", builder.write(), [head.id])
    ref.set_target(new)
    node = model.resolve("proj/1/vendored")
    assert isinstance(node, Directory) and node.entries() == []


# -- inode numbers ----------------------------------------------------------------------


def test_identical_blobs_share_inodes_across_checkpoints(store, project, model):
    first = take(store, project, "first").commit
    (project / "README.md").write_text("changed\n")
    take(store, project, "second")
    old, new = walk(model.resolve("proj/2/")), walk(model.resolve("proj/1/"))
    assert old[b"docs/guide.txt"].inode == new[b"docs/guide.txt"].inode
    assert old[b"README.md"].inode != new[b"README.md"].inode
    assert model.resolve("proj/2/docs").inode != model.resolve("proj/1/docs").inode
    assert model.resolve("proj/2/").inode != model.resolve("proj/1/").inode
    assert first  # the older checkpoint is number 2 now


def test_exec_bit_changes_the_inode(store, project, model):
    take(store, project, "first")
    (project / "README.md").chmod(0o755)
    take(store, project, "second")
    assert model.resolve("proj/1/README.md").inode != model.resolve("proj/2/README.md").inode


def test_inodes_are_the_same_in_a_new_model(store, project, layout, model):
    take(store, project, "first")
    paths = ["proj", "proj/1/", "proj/1/src/pkg", "proj/1/src/pkg/core.py", "proj/latest"]
    again = Model(layout)
    for path in paths:
        assert model.resolve(path).inode == again.resolve(path).inode, path


def test_checkpoint_keeps_node_when_renumbered(store, project, model, clock):
    take(store, project, "first")
    before = model.resolve("proj/1/")
    (project / "README.md").write_text("new\n")
    take(store, project, "second")
    clock.now += 5
    assert model.resolve("proj/2/") is before


# -- live refresh ----------------------------------------------------------------------


def test_new_checkpoints_appear_after_refresh_interval(store, project, model, clock):
    take(store, project, "first")
    assert b"2" not in names(model.resolve("proj"))
    (project / "README.md").write_text("new\n")
    take(store, project, "second")
    assert b"2" not in names(model.resolve("proj"))  # still within the interval
    clock.now += 1.0
    assert b"2" in names(model.resolve("proj"))
    assert model.resolve("proj/1/README.md").data() == b"new\n"


def test_pruned_checkpoints_and_projects_disappear(store, project, model, clock, store_git):
    first = take(store, project, "first").commit
    (project / "README.md").write_text("new\n")
    second = take(store, project, "second").commit
    assert len(names(model.resolve("proj"))) == 5
    ref = f"refs/hermes/{project_hash(project)}"
    store_git("update-ref", ref, first, second)
    clock.now += 1.0
    listing = names(model.resolve("proj"))
    assert {b"1", b"latest"} <= listing and b"2" not in listing
    assert not any(n.endswith(second[:8].encode()) for n in listing)
    store_git("update-ref", "-d", ref)
    clock.now += 1.0
    assert names(model.root) == set()


def test_new_projects_appear(store, project, tmp_path, model, clock):
    assert names(model.root) == set()
    take(store, project, "first")
    clock.now += 1.0
    assert names(model.root) == {b"proj"}


# -- memory and gc -------------------------------------------------------------------------


def test_blob_cache_stays_bounded(store, project, layout):
    for i in range(40):
        (project / f"f{i}.bin").write_bytes(os.urandom(8 * 1024))
    (project / "big.bin").write_bytes(os.urandom(300 * 1024))
    take(store, project, "first")
    small = Model(layout, blob_cache_bytes=64 * 1024)
    for i in range(40):
        assert small.resolve(f"proj/1/f{i}.bin").data() == (project / f"f{i}.bin").read_bytes()
        assert small.context.blobs.memory.weight <= 64 * 1024
    assert small.resolve("proj/1/big.bin").data() == (project / "big.bin").read_bytes()
    assert small.context.blobs.memory.weight <= 64 * 1024


def test_lru_cache_evicts_oldest_and_skips_oversize():
    cache: LruCache[str, bytes] = LruCache(10, len, largest=6)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    cache.get_or_load("a", lambda k: b"")  # a is now the most recent
    cache.put("c", b"1234")
    assert cache.weight == 8 and len(cache) == 2
    assert cache.get_or_load("b", lambda k: b"reloaded") == b"reloaded"
    cache.put("huge", b"1234567")
    assert cache.get_or_load("huge", lambda k: b"x") == b"x"


def test_reads_survive_gc_and_repack(store, project, model, store_git, clock):
    rich_project(project)
    take(store, project, "first")
    assert model.resolve("proj/1/README.md").data()  # handles open on loose objects
    for i in range(3):
        (project / f"new{i}.txt").write_text(f"{i}\n" * 1000)
        take(store, project, f"more {i}")
        store_git("gc", "--prune=now", "--quiet")
        store_git("repack", "-a", "-d", "-f", "--quiet")
        clock.now += 1.0
        fresh = Model(model.context.browser.layout)
        for path, node in walk(fresh.resolve("proj/1/")).items():
            old = model.resolve(b"proj/1/" + path)
            if isinstance(node, File):
                assert old.data() == node.data(), path
    assert model.resolve("proj/latest/new2.txt").data() == b"2\n" * 1000


# -- big blobs through git cat-file ----------------------------------------------------------


def big_blob_project(store, project) -> bytes:
    content = os.urandom(64 * 1024) * 8  # 512 KiB: read through git cat-file
    (project / "big.bin").write_bytes(content)
    take(store, project, "big")
    return content


def test_big_blobs_are_read_by_git_in_its_own_process(store, project, model):
    content = big_blob_project(store, project)
    assert model.resolve("proj/1/big.bin").data() == content
    pipe = model.context.browser._pipe
    assert pipe._proc is not None and pipe._proc.poll() is None, "no git cat-file was used"
    model.close()
    assert pipe._proc is None


def test_a_dead_git_reader_is_replaced(store, project, layout):
    content = big_blob_project(store, project)
    browser = Model(layout).context.browser
    tip = pygit2.Repository(str(layout.store)).revparse_single(
        "refs/hermes/" + project_hash(project))
    oid = str(tip.peel(pygit2.Tree)["big.bin"].id)
    assert browser.blob(oid, len(content)) == content
    browser._pipe._proc.kill()
    browser._pipe._proc.wait()
    assert browser.blob(oid, len(content)) == content
    with pytest.raises((NotFound, StoreDamaged)):  # an object a tree names but the store lacks
        browser.blob("0" * 40, len(content))
    assert browser.blob(oid, len(content)) == content  # still in step after a miss
    browser.close()


def test_big_blobs_survive_gc_and_a_new_pack(store, project, layout, store_git):
    content = big_blob_project(store, project)
    uncached = Model(layout, blob_cache_bytes=1024)  # every read goes to the store
    assert uncached.resolve("proj/1/big.bin").data() == content
    reader = uncached.context.browser._pipe._proc
    store_git("gc", "--prune=now", "--quiet")  # the loose object is now in a pack
    store_git("repack", "-a", "-d", "-f", "--quiet")  # and that pack replaced by another
    assert uncached.resolve("proj/1/big.bin").data() == content
    assert uncached.context.browser._pipe._proc is reader, "the same git found it again"
    uncached.close()


# -- the watcher: what the kernel is told (recorded, no kernel needed) ------------------------


class Told:
    def __init__(self) -> None:
        self.entries: list[tuple[int, bytes]] = []
        self.inodes: list[int] = []

    def entry(self, directory: int, name: bytes) -> None:
        self.entries.append((directory, name))

    def inode(self, inode: int) -> None:
        self.inodes.append(inode)

    def clear(self) -> None:
        self.entries.clear()
        self.inodes.clear()


def test_watcher_invalidates_exactly_what_changed(store, project, layout, tmp_path, store_git):
    from rewindfs.fs.inodes import ROOT_INODE
    from rewindfs.fs.watch import Watcher

    h16 = project_hash(project)
    first = take(store, project, "first").commit
    model = Model(layout)
    model.context.watched = True
    told = Told()
    watcher = Watcher(model.root, told.entry, told.inode)
    proj = model.resolve("proj")
    names(proj)  # what the kernel saw
    watcher.tick()
    assert (told.entries, told.inodes) == ([], [])
    watcher.tick()  # nothing changed: nothing said
    assert (told.entries, told.inodes) == ([], [])

    (project / "README.md").write_text("second\n")
    second = take(store, project, "second").commit
    assert b"2" not in names(proj)  # watched: only the watcher refreshes
    watcher.tick()
    assert b"2" in names(proj)
    # 1 and latest now mean another checkpoint: their old entries go; the listing too
    assert sorted(told.entries) == [(proj.inode, b"1"), (proj.inode, b"latest")]
    assert told.inodes == [proj.inode]
    told.clear()

    set_label(store, h16, "good", first)
    watcher.tick()
    assert (told.entries, told.inodes) == ([], [proj.inode])  # only a new name
    told.clear()
    store_git("update-ref", f"refs/rewind/labels/{h16}/good", second)  # moved by hand
    watcher.tick()
    assert (told.entries, told.inodes) == ([(proj.inode, b"good")], [proj.inode])
    told.clear()

    other = tmp_path / "other"
    other.mkdir()
    (other / "f").write_text("f")
    take(store, other, "first")
    watcher.tick()
    # the root's listing; the new project's own (never shown to the kernel: a no-op there)
    assert (told.entries, told.inodes) == ([], [ROOT_INODE, model.resolve("other").inode])


def test_file_time_is_when_its_bytes_were_checkpointed(store, project, model, store_dir):
    first = take(store, project, "first").commit
    repo = pygit2.Repository(str(store_dir))
    (project / "README.md").write_text("changed\n")
    second = take(store, project, "second").commit
    (project / "docs" / "guide.txt").write_text("changed too\n")
    third = take(store, project, "third").commit
    t1 = repo[first].author.time * 1_000_000_000
    t3 = repo[third].author.time * 1_000_000_000
    core = "proj/{}/src/pkg/core.py"
    assert model.resolve(core.format(1)).attributes().mtime_ns == t1
    assert model.resolve(core.format(1)) is model.resolve(core.format(3))
    assert model.resolve("proj/1/docs/guide.txt").attributes().mtime_ns == t3
    t2 = repo[second].author.time * 1_000_000_000
    assert model.resolve("proj/1/README.md") is model.resolve("proj/2/README.md")
    assert model.resolve("proj/1/README.md").attributes().mtime_ns == t2
    assert model.resolve("proj/3/README.md").attributes().mtime_ns == t1


def test_big_blobs_are_spooled_not_kept_in_memory(store, project, layout):
    MiB = 1024 * 1024
    data = {name: os.urandom(size) for name, size in
            (("a.bin", 3 * MiB), ("b.bin", 2 * MiB), ("huge.bin", 5 * MiB))}
    for name, content in data.items():
        (project / name).write_bytes(content)
    take(store, project, "big")
    model = Model(layout, spool_bytes=4 * MiB)  # huge.bin is over the whole spool budget
    for name, content in data.items():
        node = model.resolve(f"proj/1/{name}")
        assert isinstance(node, File)
        for offset in (0, 1, MiB - 1, len(content) - 10, len(content), len(content) + 7):
            assert node.read(offset, 70_000) == content[offset:offset + 70_000], (name, offset)
    blobs = model.context.blobs
    assert blobs.memory.weight == 0  # none of them was ever whole in memory
    assert blobs.spools.weight <= 4 * MiB
    model.close()
