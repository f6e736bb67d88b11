"""`rewind ui` while it stays open (issue 41), under textual's headless pilot on real stores:
Ctrl-C quits, ages and the files pane follow the clock and the working tree, a store
`rewind clear` removed is never built again by the screen's own reading, the
confirmation fits a 60x15 terminal, and a one-line file is drawn cut."""

from __future__ import annotations

from uihelp import make_app, pilot_test, screen_text, settle, status, uidemo, wait_for

from rewindfs.store import Layout
from rewindfs.ui.dialogs import Confirm, Help


def first_row_text(app) -> str:
    lst = app.timeline.list
    return str(lst.get_option(app.timeline.order[0]).prompt)


@pilot_test
async def test_ctrl_c_quits_as_q_does(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, Help)
        listed = str(app.screen.query_one(".dialog-body Static").render())
        assert "q  ctrl+c  quit" in listed, listed
        await pilot.press("escape", "ctrl+c")
        await pilot.pause()
        assert app.return_code == 0, "ctrl+c did not quit"
        assert "ctrl+q" not in screen_text(app)  # no "press ctrl+q to quit" in its place


@pilot_test
async def test_ctrl_c_quits_from_a_dialog_too(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0
    assert not (workdir / "notes.md").exists(), "quitting answered nothing: nothing changed"


@pilot_test
async def test_ages_follow_the_clock(demo):
    home, workdir = demo
    now = [uidemo.NOW]
    app = make_app(home, workdir, clock=lambda: now[0], live=0.05)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        assert " 40m " in first_row_text(app), first_row_text(app)
        now[0] += 3 * 3600
        await wait_for(pilot, lambda: " 3h " in first_row_text(app))
        assert app.timeline.selected.cp.number == 1  # the selection stays


@pilot_test
async def test_the_files_pane_follows_the_working_tree(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW, live=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter", "j")
        await settle(pilot)
        assert app.files_pane.files.title.startswith("changed since #1")
        assert [c.path for c in app.files_pane.files.changed] == [b"app.py", b"notes.md"]
        assert app.files_pane.selected.path == b"notes.md"
        # Someone adds a file, and puts app.py back as checkpoint 1 had it.
        (workdir / "todo.txt").write_text("new\n")
        (workdir / "app.py").write_bytes(uidemo.EDITED_APP)
        await wait_for(pilot, lambda: app.files_pane.files is not None and [
            c.path for c in app.files_pane.files.changed] == [b"notes.md", b"todo.txt"])
        await settle(pilot)
        assert app.files_pane.selected.path == b"notes.md"  # the selection stays
        assert app.focused.id == "files"
        title = str(app.query_one("#files-title").render())
        assert title.startswith("2 files changed since #1"), title


@pilot_test
async def test_an_open_ui_never_builds_a_cleared_store_again(demo, run_rewind):
    home, workdir = demo
    base = Layout.for_home(home).base
    app = make_app(home, workdir, clock=lambda: uidemo.NOW, live=0.05)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        assert app.files_pane.files is not None  # the working tree was read once
        run_rewind("clear", "-f", check=True)
        assert not base.exists()
        await wait_for(pilot, lambda: app.tip is None and not app._reloading
                       and not app.timeline.order)
        ticks = app._generation["live"]
        await wait_for(pilot, lambda: app._generation["live"] >= ticks + 5)
        await settle(pilot)
        assert "timeline: 0 checkpoints" in screen_text(app)
        assert not base.exists(), f"the UI wrote {sorted(base.rglob('*'))[:5]}"
        # Its reading goes on: a checkpoint taken now appears.
        run_rewind("checkpoint", "-C", str(workdir), "-m", "again", check=True)
        await wait_for(pilot, lambda: len(app.timeline.order) == 1)


@pilot_test
async def test_the_confirmation_fits_60x15(demo):
    home, workdir = demo
    for i in range(30):  # a plan longer than the screen
        (workdir / f"file-{i:02}.txt").write_text("new\n")
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(60, 15)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        shown = screen_text(app)
        question = f"{app.screen.plan.question} y/n"
        assert question in shown and "yes (y)" in shown and "no (n)" in shown, shown
        assert len(workdir.as_posix()) > 40  # (the project's path alone is wider)
        await pilot.press("n")
        await settle(pilot)
        assert status(app) == "nothing changed"


@pilot_test
async def test_a_one_line_file_is_drawn_cut(demo):
    """The diff pane's bound is lines (5,000) and bytes (1 MiB): an 880 kB minified file
    is one line under both, and drawing it whole took the screen most of a minute."""
    home, workdir = demo
    (workdir / "min.js").write_text("var a=1;" * 110_000)
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter", "j")  # app.py, min.js, notes.md
        await settle(pilot)
        assert app.files_pane.selected.path == b"min.js"
        drawn = str(app.query_one("#diff").render())
        assert "+var a=1;var a=1;" in drawn and "more characters on this line" in drawn
        assert len(drawn) < 10_000, len(drawn)


@pilot_test
async def test_a_files_pane_that_cannot_be_read_again_says_why(demo):
    """The files pane read again failing: said where the answer would have been (what it
    listed is true no longer), not dropped."""
    import shutil

    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW, live=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.files_pane.files is not None
        shutil.rmtree(workdir)  # the project gone: nothing to compare with
        await wait_for(pilot, lambda: app.files_pane.files is None)
        assert "error:" in str(app.query_one("#files").get_option_at_index(0).prompt)
