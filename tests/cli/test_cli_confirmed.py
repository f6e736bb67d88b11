"""What a person confirmed is what happens, or nothing does (issue 41, case 3, beyond
restores): `rewind delete` and `rewind forget` ask on a terminal, and a checkpoint taken
while the question waits changes what they would do (ids rewritten, a checkpoint more
forgotten): refused, nothing changed. Real `rewind` on a pseudo-terminal, a real store."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from conftest import REWIND
from terminal import PtyProcess

from rewindfs.store import Layout, Store, project_hash, take


@pytest.fixture
def tty(child_env):
    def start(*args: str) -> PtyProcess:
        return PtyProcess([REWIND, *map(str, args)], env=child_env(TERM="xterm"))

    return start


def chain(store: Store, project: Path) -> list[str]:
    """The project's checkpoints, newest first, read with a fresh handle."""
    repo = pygit2.Repository(str(store.layout.store))
    ref = repo.references.get(Layout.project_ref(project_hash(project)))
    out = []
    commit = ref.peel(pygit2.Commit) if ref is not None else None
    while commit is not None:
        out.append(str(commit.id))
        commit = commit.parents[0] if commit.parent_ids else None
    return out


def test_delete_refuses_once_a_checkpoint_came_after_the_question(tty, store: Store,
                                                                  project: Path):
    """`rewind delete 1` asks about the newest checkpoint (no other id changes); one
    taken meanwhile would have its id rewritten by that delete: refused."""
    take(store, project, "one")
    (project / "a.txt").write_text("a\n")
    newest = take(store, project, "two").commit
    proc = tty("delete", "1", "-C", project)
    proc.expect(r"delete checkpoint 1 [0-9a-f]{8} \(two\)\? \[y/N\]")
    assert b"new ids" not in proc.plain  # deleting the newest changes no other id
    (project / "b.txt").write_text("b\n")
    newer = take(store, project, "three while it asked").commit
    before = chain(store, project)
    assert before[:2] == [newer, newest]
    proc.send("y\n")
    assert proc.wait() == 1, proc.plain
    assert b"nothing was deleted" in proc.plain, proc.plain
    assert chain(store, project) == before


def test_forget_refuses_once_a_checkpoint_came_after_the_question(tty, store: Store,
                                                                  project: Path):
    take(store, project, "one")
    proc = tty("forget", "-C", project)
    proc.expect(r"and its 1 checkpoint\(s\)\? \[y/N\]")
    (project / "a.txt").write_text("a\n")
    take(store, project, "two while it asked")
    before = chain(store, project)
    assert len(before) == 2
    proc.send("y\n")
    assert proc.wait() == 1, proc.plain
    assert b"nothing was forgotten" in proc.plain, proc.plain
    assert chain(store, project) == before
