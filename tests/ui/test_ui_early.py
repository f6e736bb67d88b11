"""`rewind ui`'s first rows read by a forked child while textual is imported
(rewindfs.ui.early): the same rows the parent would read, the rest read on by the parent
from where the child stopped, a history that changed meanwhile said and read again, and
no child where fork is turned off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rewindfs.errors import StoreError


def _source(home: Path, project: Path):
    from rewindfs.cli.app import App
    from rewindfs.cli.target import resolve
    from rewindfs.ui.source import Source

    app = App(str(home), "never", False)
    return app, Source(app, resolve(app, str(project)))


@pytest.fixture
def history(home: Path, project: Path, mgr, monkeypatch):
    """Seven checkpoints; a first screen of three rows."""
    monkeypatch.setattr("rewindfs.ui.source.FIRST_SCREEN", 3)
    for n in range(7):
        (project / "README.md").write_text(f"version {n}\n")
        assert mgr.checkpoint(str(project), f"step {n}")["success"]
    return home, project


def test_the_child_reads_the_first_rows_and_the_parent_reads_on(history, mgr):
    from rewindfs.ui.early import Early

    home, project = history
    app, reference = _source(home, project)
    expected = [row.cp.id for row in reference.open() + reference.more(10)]
    assert len(expected) == 7

    app, source = _source(home, project)
    early = Early(app, source)
    assert early.pid > 0, "no child was forked: the test would prove nothing"
    rows, error = early.result()
    assert error is None
    assert [row.cp.id for row in rows] == expected[:3]
    assert source.count == 7 and not source.complete
    assert [row.cp.id for row in source.more(10)] == expected[3:]
    assert source.complete


def test_a_history_changed_meanwhile_is_said_not_mixed(history, mgr):
    from rewindfs.ui.early import Early

    home, project = history
    app, source = _source(home, project)
    early = Early(app, source)
    assert early.pid > 0
    rows, _ = early.result()
    (project / "README.md").write_text("after the first screen\n")
    assert mgr.checkpoint(str(project), "taken meanwhile")["success"]
    with pytest.raises(StoreError, match="history changed"):
        source.more(10)
    assert [row.cp.id for row in source.open()][1:] == [row.cp.id for row in rows][:2]


def test_without_fork_the_parent_reads_them(history, monkeypatch):
    from rewindfs.ui.early import Early

    monkeypatch.setenv("REWIND_PORTABLE", "fork")
    home, project = history
    app, source = _source(home, project)
    early = Early(app, source)
    assert early.pid == 0 and early.result() is None


def test_what_the_child_met_on_the_way_is_said_by_the_parent(history, monkeypatch):
    """A notice (a broken history, said once at the end of `rewind ui`) met by the child
    reaches the parent's listener, as if the parent had read the rows itself."""
    from rewindfs.store.objects import notices
    from rewindfs.ui.early import Early
    from rewindfs.ui.source import Source

    opened = Source.open

    def open_with_a_notice(self):
        notices.notice(f"read by process {os.getpid()}")
        return opened(self)

    monkeypatch.setattr(Source, "open", open_with_a_notice)
    home, project = history
    app, source = _source(home, project)
    said: list[str] = []
    with notices.listening(said.append):
        early = Early(app, source)
        assert early.pid > 0
        rows, _ = early.result()
    assert said == [f"read by process {early.pid}"] and len(rows) == 3
