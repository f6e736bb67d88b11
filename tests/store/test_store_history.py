"""History: numbering, resolving references, labels, per-checkpoint stats, diffs."""

from __future__ import annotations

import re

import pygit2
import pytest

from rewindfs.errors import InvalidInput, NotFound, RewindError
from rewindfs.store import (
    checkpoints,
    diff_between,
    project_hash,
    resolve,
    set_label,
    stats,
    take,
    working_tree_tree,
)

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@pytest.fixture
def three(store, project):
    """Three checkpoints of `project`; returns their commit ids oldest first."""
    ids = []
    for i, reason in enumerate(["one", "two", "three"]):
        (project / f"step{i}.txt").write_text(f"step {i}\n")
        result = take(store, project, reason)
        assert result.taken
        ids.append(result.commit)
    return ids


def repo_and_h16(store, project):
    return pygit2.Repository(str(store.layout.store)), project_hash(project)


def test_numbering_newest_first(store, project, three):
    repo, h16 = repo_and_h16(store, project)
    history = checkpoints(repo, h16)
    assert [c.number for c in history] == [1, 2, 3]
    assert [c.id for c in history] == three[::-1]
    assert [c.reason for c in history] == ["three", "two", "one"]
    assert history[0].parent_id == three[1]
    assert history[2].parent_id is None
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$", history[0].timestamp)


def test_resolve_every_form(store, project, three):
    repo, h16 = repo_and_h16(store, project)
    newest, middle, oldest = three[2], three[1], three[0]
    assert resolve(repo, h16, "latest").id == newest
    assert resolve(repo, h16, "1").id == newest
    assert resolve(repo, h16, "2").id == middle
    assert resolve(repo, h16, "3").id == oldest
    assert resolve(repo, h16, oldest).id == oldest
    assert resolve(repo, h16, oldest.upper()).id == oldest
    assert resolve(repo, h16, middle[:8]).id == middle
    # the shortest prefix that is unique among the three, but at least 4 hex digits
    for commit in three:
        n = 4
        while sum(c.startswith(commit[:n]) for c in three) > 1:
            n += 1
        assert resolve(repo, h16, commit[:n]).id == commit
    set_label(store, h16, "before-refactor", middle)
    assert resolve(repo, h16, "before-refactor").id == middle
    assert resolve(repo, h16, " 2 ").id == middle


def test_resolve_unknown_is_not_found(store, project, three):
    repo, h16 = repo_and_h16(store, project)
    for bad in ["4", "0", "99", "no-such-label", "deadbeef", "abc"]:
        with pytest.raises(NotFound):
            resolve(repo, h16, bad)


def test_resolve_dash_is_invalid_input(store, project, three):
    repo, h16 = repo_and_h16(store, project)
    for bad in ["-1", "--patch", "-p", "--output=/tmp/x"]:
        with pytest.raises(InvalidInput):
            resolve(repo, h16, bad)
    with pytest.raises(InvalidInput):
        resolve(repo, h16, "")


def test_resolve_project_without_checkpoints(store, project, three, tmp_path):
    repo, _ = repo_and_h16(store, project)
    with pytest.raises(NotFound):
        resolve(repo, project_hash(tmp_path / "never"), "1")


def test_hash_of_another_projects_checkpoint_is_an_error(store, project, three, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("other\n")
    foreign = take(store, other, "other project").commit
    repo, h16 = repo_and_h16(store, project)
    for ref in [foreign, foreign[:10]]:
        with pytest.raises(RewindError) as info:
            resolve(repo, h16, ref)
        assert "not a checkpoint of this project" in str(info.value)
    # and the other project resolves its own
    assert resolve(repo, project_hash(other), foreign[:10]).id == foreign


def test_labels_unique_per_project(store, project, three, tmp_path):
    _, h16 = repo_and_h16(store, project)
    set_label(store, h16, "good", three[0])
    set_label(store, h16, "good", three[0])  # same checkpoint again: fine
    with pytest.raises(InvalidInput):
        set_label(store, h16, "good", three[1])
    repo, _ = repo_and_h16(store, project)
    assert resolve(repo, h16, "good").id == three[0]
    # another project may use the same name
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("o\n")
    foreign = take(store, other, "x").commit
    set_label(store, project_hash(other), "good", foreign)
    repo, _ = repo_and_h16(store, project)
    assert resolve(repo, project_hash(other), "good").id == foreign
    assert resolve(repo, h16, "good").id == three[0]
    # list shows labels on the right checkpoint
    history = checkpoints(repo, h16)
    assert history[2].labels == ["good"]
    assert history[0].labels == [] and history[1].labels == []


@pytest.mark.parametrize("label", ["12", "latest", "-x", "a..b", "x.lock", "", "a b", "a/b",
                                   "x" * 65])
def test_bad_labels_rejected(store, project, three, label):
    _, h16 = repo_and_h16(store, project)
    with pytest.raises(InvalidInput):
        set_label(store, h16, label, three[0])


def _shortstat_counts(text: str) -> tuple[int, int, int]:
    def grab(word):
        m = re.search(rf"(\d+) {word}", text)
        return int(m.group(1)) if m else 0

    return grab("file"), grab("insertion"), grab("deletion")


def test_list_stats_match_git_shortstat(store, project, store_git):
    core = project / "src" / "pkg" / "core.py"
    steps = [
        lambda: None,  # the first checkpoint: a file count, no line counts (see stats())
        lambda: core.write_text(core.read_text().replace("a + b", "a + b  # add") + "X = 1\n"),
        lambda: (project / "docs" / "guide.txt").unlink(),
        lambda: (project / "data.bin").write_bytes(b"\x00\x01\x02" * 50),
        lambda: [(project / f"many{i}.txt").write_text("a\nb\nc\n" * i) for i in range(5)],
        lambda: (project / "README.md").write_text("# sample\n\nRewritten.\nTwo.\n"),
    ]
    for i, step in enumerate(steps):
        step()
        assert take(store, project, f"step {i}").taken
    repo, h16 = repo_and_h16(store, project)
    history = checkpoints(repo, h16)
    assert len(history) == len(steps)
    for cp in history:
        parent = cp.parent_id or EMPTY_TREE
        out = store_git("diff", "--shortstat", parent, cp.id).stdout
        expected = _shortstat_counts(out)
        if cp.parent_id is None:  # counting every line of a whole project is too slow
            expected = (expected[0], 0, 0)
        s = stats(repo, cp)
        assert (s.files_changed, s.insertions, s.deletions) == expected, (cp.reason, out)
    # the Hermes-style list (API) reports the same numbers
    from rewindfs.agent.manager import CheckpointManager

    listed = CheckpointManager(enabled=True, base=store.layout.base).list_checkpoints(
        str(project))
    for entry, cp in zip(listed, history, strict=True):
        s = stats(repo, cp)
        assert (entry["files_changed"], entry["insertions"], entry["deletions"]) == \
            (s.files_changed, s.insertions, s.deletions)


def test_list_stats_with_rename_match_git(store, project, store_git):
    take(store, project, "first")
    body = "\n".join(f"line {i}" for i in range(40)) + "\n"
    (project / "long.txt").write_text(body)
    take(store, project, "add long")
    (project / "long.txt").rename(project / "renamed.txt")
    (project / "renamed.txt").write_text(body + "one more\n")
    take(store, project, "rename and edit")
    repo, h16 = repo_and_h16(store, project)
    newest = checkpoints(repo, h16)[0]
    out = store_git("diff", "--shortstat", newest.parent_id, newest.id).stdout
    s = stats(repo, newest)
    assert (s.files_changed, s.insertions, s.deletions) == _shortstat_counts(out), out


def test_diff_between_checkpoints(store, project, three):
    repo, h16 = repo_and_h16(store, project)
    old, new = resolve(repo, h16, "3"), resolve(repo, h16, "1")
    result = diff_between(repo, old.tree_id, new.tree_id)
    assert sorted(result.names) == ["step1.txt", "step2.txt"]
    assert result.files_changed == 2 and result.insertions == 2 and result.deletions == 0
    assert "+step 2" in result.patch
    assert "2 files changed" in result.stat


def test_diff_to_working_tree_writes_no_checkpoint(store, project, three, store_dir):
    (project / "step0.txt").write_text("changed\n")
    repo, h16 = repo_and_h16(store, project)
    before = str(repo.references[f"refs/hermes/{h16}"].target)
    now = working_tree_tree(store, project)
    result = diff_between(repo, resolve(repo, h16, "1").tree_id, now)
    assert result.names == ["step0.txt"]
    assert "-step 0" in result.patch and "+changed" in result.patch
    repo = pygit2.Repository(str(store_dir))
    assert str(repo.references[f"refs/hermes/{h16}"].target) == before
    # the next real checkpoint still sees the change
    assert take(store, project, "after diff").taken


def test_history_readable_by_git_log(store, project, three, store_git):
    h16 = project_hash(project)
    proc = store_git("log", "--format=%H|%s", f"refs/hermes/{h16}")
    lines = proc.stdout.strip().splitlines()
    assert [line.split("|")[0] for line in lines] == three[::-1]
