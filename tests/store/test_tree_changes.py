"""What differs between two trees (store.history.files.trees.changes, read only where the
subtrees' ids differ) is what libgit2's tree diff lists, for random pairs of trees: files
added, removed, changed in content or mode, files becoming links and gitlinks and back,
a file becoming a folder and back, at every level. And a checkpoint's change stats
(treestats) and its records' changes equal what the whole diff gives."""

from __future__ import annotations

import pygit2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygit2.enums import DiffOption, FileMode

from rewindfs.store.history.files import trees, treestats
from rewindfs.store.history.files.treestats import tree_stats

BLOB, EXE, LINK, COMMIT = (int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE),
                           int(FileMode.LINK), int(FileMode.COMMIT))
NAMES = st.sampled_from([b"a", b"a-b", b"a.txt", b"b", b"c", b"z"])
CONTENT = st.sampled_from([b"", b"one\n", b"two\nlines\n", b"one\nmore\n", b"\0binary"])
LEAF = st.tuples(st.sampled_from([BLOB, BLOB, EXE, LINK, COMMIT]), CONTENT)
SPEC = st.recursive(LEAF, lambda inner: st.dictionaries(NAMES, inner, max_size=4),
                    max_leaves=14)
TOPS = st.dictionaries(NAMES, SPEC, max_size=5)


def build(repo: pygit2.Repository, spec: dict) -> pygit2.Oid:
    builder = repo.TreeBuilder()
    for name, value in spec.items():
        if isinstance(value, dict):
            builder.insert(name.decode(), build(repo, value), int(FileMode.TREE))
        else:
            mode, data = value
            oid = pygit2.Oid(raw=pygit2.hash(data).raw) if mode == COMMIT \
                else repo.create_blob(data)
            builder.insert(name.decode(), oid, mode)
    return builder.write()


def libgit2_changes(repo: pygit2.Repository, old: str, new: str) -> list[tuple]:
    """The oracle: libgit2's whole-tree diff, as trees.changes read it before."""
    diff = repo[old].diff_to_tree(repo[new], flags=DiffOption.INCLUDE_TYPECHANGE)
    zero = pygit2.Oid(hex="0" * 40)

    def entry(f: pygit2.DiffFile):
        return None if f.id == zero or not f.mode else (f.raw_path, str(f.id), f.mode)

    return [(d.new_file.raw_path if entry(d.new_file) else d.old_file.raw_path,
             entry(d.old_file), entry(d.new_file)) for d in diff.deltas]


def ours(repo: pygit2.Repository, old: str, new: str) -> list[tuple]:
    return [(c.path, c.old and (c.old.path, c.old.oid, c.old.mode),
             c.new and (c.new.path, c.new.oid, c.new.mode))
            for c in trees.changes(repo, old, new)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=TOPS, new=TOPS)
def test_changes_are_libgit2s(tmp_path_factory, old: dict, new: dict) -> None:
    repo = pygit2.init_repository(str(tmp_path_factory.mktemp("repo")), bare=True)
    a, b = str(build(repo, old)), str(build(repo, new))
    assert ours(repo, a, b) == libgit2_changes(repo, a, b)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=TOPS, new=TOPS)
def test_change_stats_are_the_whole_diffs(tmp_path_factory, old: dict, new: dict) -> None:
    repo = pygit2.init_repository(str(tmp_path_factory.mktemp("repo")), bare=True)
    a, b = str(build(repo, old)), str(build(repo, new))
    diff = repo[a].diff_to_tree(repo[b])
    diff.find_similar()
    s = diff.stats
    got = tree_stats(repo, a, b)
    assert (got.files_changed, got.insertions, got.deletions) == \
        (s.files_changed, s.insertions, s.deletions)
    by_file = treestats._by_file(repo, a, b)   # (None: the whole diff said it above)
    assert by_file is None or by_file == got


def test_one_changed_file_is_counted_by_file(tmp_path) -> None:
    """The scenario the property test needs: the file-by-file count is taken."""
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    old = {b"a": (BLOB, b"one\n"), b"d": {b"x": (BLOB, b"two\nlines\n")}}
    new = {b"a": (BLOB, b"one\n"), b"d": {b"x": (BLOB, b"one\nmore\n")}}
    a, b = str(build(repo, old)), str(build(repo, new))
    assert treestats._by_file(repo, a, b) == tree_stats(repo, a, b)
    got = treestats._by_file(repo, a, b)
    assert got is not None and (got.files_changed, got.insertions, got.deletions) == (1, 2, 2)


def libgit2_record_changes(repo: pygit2.Repository, old: str, new: str) -> list[str]:
    """The oracle for records._changes: the whole diff, as it read it before."""
    out = []
    for delta in repo[old].diff_to_tree(repo[new]).deltas:
        if COMMIT in (delta.old_file.mode, delta.new_file.mode):
            continue
        if str(delta.new_file.id) == "0" * 40:
            out += [delta.old_file.raw_path.decode(), ""]
        else:
            out += [delta.new_file.raw_path.decode(), str(delta.new_file.id)]
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=TOPS, new=TOPS)
def test_record_changes_are_the_whole_diffs(tmp_path_factory, old: dict, new: dict) -> None:
    from rewindfs.store.history.records import records

    repo = pygit2.init_repository(str(tmp_path_factory.mktemp("repo")), bare=True)
    a, b = str(build(repo, old)), str(build(repo, new))
    assert records._changes(repo, a, b) == libgit2_record_changes(repo, a, b)
