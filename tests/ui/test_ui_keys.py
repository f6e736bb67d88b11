"""`rewind ui` driven by its keys under textual's headless pilot, on real stores: moving,
opening a checkpoint's files, each action's plan and its y/n (nothing changes before y),
the files on disk after it, undo, revert of an agent turn, labels, search, live refresh,
and damage shown as one line in place."""

from __future__ import annotations

from uihelp import make_app, pilot_test, screen_text, settle, status, uidemo, wait_for

from rewindfs.store import Layout, Store, take
from rewindfs.ui.dialogs import Confirm, Help


def cp_of(app):
    return app.timeline.selected.cp


@pilot_test
async def test_keys_move_open_and_go_back(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.focused.id == "timeline" and cp_of(app).number == 1
        for key, number in (("j", 2), ("down", 3), ("down", 3), ("k", 2), ("up", 1), ("up", 1)):
            await pilot.press(key)
            await settle(pilot)
            assert cp_of(app).number == number, key
        await pilot.press("j", "enter")
        await settle(pilot)
        assert app.focused.id == "files"
        assert app.files_pane.files.cp.number == 2
        assert app.files_pane.list.highlighted == 0
        await pilot.press("escape")
        assert app.focused.id == "timeline"
        await pilot.press("question_mark")
        assert isinstance(app.screen, Help)
        assert "revert the selected checkpoint's agent turn" in screen_text(app)
        await pilot.press("escape", "q")
    assert app.return_code == 0


@pilot_test
async def test_restore_a_deleted_file_after_y_and_undo_it(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter", "j")  # checkpoint 1's files: app.py, notes.md
        await settle(pilot)
        assert app.files_pane.selected.path == b"notes.md"
        assert app.files_pane.selected.status == "deleted"
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        shown = screen_text(app)
        assert "restore notes.md to" in shown and "create 1: notes.md" in shown
        assert "restore notes.md? y/n" in shown
        await pilot.press("n")  # the answer no: nothing changes
        await settle(pilot)
        assert not (workdir / "notes.md").exists() and status(app) == "nothing changed"
        before = len(Store(Layout.for_home(home)).repo.references.get(
            Layout.project_ref(app.source.key)).peel().message)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert (workdir / "notes.md").read_bytes() == uidemo.FILES["notes.md"]
        assert status(app).startswith("restored notes.md to")
        newest = app.timeline.rows[app.timeline.order[0]].cp
        assert newest.pre_rollback, "the restore took its pre-rollback snapshot first"
        assert before  # the tip read before the restore
        await pilot.press("u")
        await settle(pilot)
        assert "undo the last restore? y/n" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert not (workdir / "notes.md").exists()
        assert status(app).startswith("undid the last restore")


@pilot_test
async def test_restore_the_whole_checkpoint_from_the_timeline(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("j", "j")  # the first checkpoint
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        shown = screen_text(app)
        assert "overwrite 1: app.py" in shown and "create 1: notes.md" in shown
        await pilot.press("y")
        await settle(pilot)
    for rel, data in uidemo.FILES.items():
        assert (workdir / rel).read_bytes() == data


@pilot_test
async def test_revert_an_agent_turn_shows_its_plan_first(home, project, mgr):
    mgr.begin_step(str(project), "s1", "turn-1")
    (project / "README.md").write_text("changed by the agent\n")
    mgr.end_step(str(project), "s1")
    app = make_app(home, project)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert cp_of(app).trailers.get("Rewind-Turn") == "turn-1"
        await pilot.press("t")
        await settle(pilot)
        shown = screen_text(app)
        assert "revert turn(s) turn-1" in shown and "overwrite 1: README.md" in shown
        assert (project / "README.md").read_text() == "changed by the agent\n"
        await pilot.press("y")
        await settle(pilot)
        assert status(app).startswith("reverted turn(s) turn-1")
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"


@pilot_test
async def test_revert_takes_back_the_selected_session_s_turn_only(home, project, mgr):
    """Two sessions (issue 45): `t` on B's checkpoint plans B's turn alone, names B and the
    file A changed after B (kept); A's work stays."""
    for session, step, files in (("B", "b1", {"shared.txt": "B\n", "b.txt": "B's\n"}),
                                 ("A", "a1", {"shared.txt": "B and A\n", "a.txt": "A's\n"})):
        mgr.begin_step(str(project), step, f"turn-{step}", session=session)
        for rel, text in files.items():
            (project / rel).write_text(text)
        mgr.end_step(str(project), step)
    app = make_app(home, project)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        while cp_of(app).trailers.get("Rewind-Session") != "B":
            await pilot.press("j")
            await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        shown = screen_text(app)
        assert "revert turn(s) turn-b1 (1 step(s) of agent session B)" in shown, shown
        assert "kept: shared.txt" in shown and "delete 1: b.txt" in shown, shown
        await pilot.press("y")
        await settle(pilot)
        assert status(app).startswith("reverted turn(s) turn-b1 of agent session B")
    assert not (project / "b.txt").exists()
    assert (project / "shared.txt").read_text() == "B and A\n"
    assert (project / "a.txt").read_text() == "A's\n"


@pilot_test
async def test_a_checkpoint_of_no_turn_says_so_in_one_line(demo):
    home, workdir = demo
    app = make_app(home, workdir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("j", "j", "t")
        await settle(pilot)
        assert status(app).startswith("error: checkpoint") and "of no agent turn" in status(app)


@pilot_test
async def test_label_a_checkpoint(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("j", "l")
        await pilot.press(*"good")
        await pilot.press("enter")
        await settle(pilot)
        assert "[good]" in screen_text(app)
        assert cp_of(app).labels == ["good"]


@pilot_test
async def test_search_by_name_and_by_text_jumps_to_the_checkpoint(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"ship on", "enter")
        await settle(pilot)
        shown = screen_text(app)
        assert "notes.md:3: - ship on friday" in shown
        await pilot.press("down", "enter")
        await settle(pilot)
        assert "ship on friday" in screen_text(app)
        await pilot.press("slash", *"app.py", "enter")
        await settle(pilot)
        assert "app.py  (changed here)" in screen_text(app)


@pilot_test
async def test_new_checkpoints_appear_while_it_runs(demo):
    home, workdir = demo
    app = make_app(home, workdir, live=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert len(app.timeline.order) == 3
        (workdir / "later.txt").write_text("written by an agent still running\n")
        take(Store(Layout.for_home(home)), workdir, "before: make build")
        await wait_for(pilot, lambda: len(app.timeline.order) == 4)
        await settle(pilot)
        assert "before: make build" in screen_text(app)


@pilot_test
async def test_a_damaged_ref_is_one_line_in_the_timeline(demo):
    home, workdir = demo
    layout = Layout.for_home(home)
    from rewindfs.store import project_hash

    ref = layout.store / Layout.project_ref(project_hash(workdir))
    ref.write_text("not a commit id\n")
    app = make_app(home, workdir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = screen_text(app)
        assert "error:" in shown and "Traceback" not in shown
        assert status(app).startswith("error:")


@pilot_test
async def test_a_project_gone_from_disk_says_so_in_the_files_pane(demo):
    home, workdir = demo
    import shutil

    shutil.rmtree(workdir)
    app = make_app(home, workdir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = str(app.files_pane.list.get_option_at_index(0).prompt)
        assert shown.startswith("error: ") and "is not a directory here to compare" in shown
        await pilot.press("s")  # what the step changed needs no working tree (not newest)
        await pilot.press("j")
        await settle(pilot)
        assert "the step after #2 changed" in screen_text(app)


@pilot_test
async def test_a_binary_file_is_summarized(demo):
    home, workdir = demo
    (workdir / "logo.png").write_bytes(b"\x89PNG\0changed")
    app = make_app(home, workdir)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        names = [c.path for c in app.files_pane.files.changed]
        await pilot.press(*["j"] * names.index(b"logo.png"))
        await settle(pilot)
        old = len(uidemo.FILES["logo.png"])
        assert f"binary file ({old} B -> 12 B)" in screen_text(app)
        await pilot.press("d")
        await settle(pilot)
        assert str(app.query_one("#diff-title").render()) == "logo.png as #1 holds it"
        assert f"binary file ({old} B)" in screen_text(app)


@pilot_test
async def test_copying_a_mount_path_without_a_mount_says_why(demo):
    home, workdir = demo
    app = make_app(home, workdir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert "no rewindfs mount at" in status(app)


@pilot_test
async def test_other_projects_are_one_key_away(demo, project):
    home, workdir = demo
    take(Store(Layout.for_home(home)), project, "the other project")
    app = make_app(home, workdir)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        shown = screen_text(app)
        assert str(project) in shown and str(workdir) in shown
        titles = [t.title for t in app.screen.found]
        await pilot.press(*["down"] * titles.index(str(project)), "enter")
        await settle(pilot)
        assert app.source.target.workdir == project
        assert "the other project" in screen_text(app)


@pilot_test
async def test_the_mouse_selects_and_opens(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert cp_of(app).number == 1
        lst = app.timeline.list
        row = lst._index_to_line[lst.get_option_index(app.timeline.order[2])]
        await pilot.click("#timeline", offset=(10, row))  # checkpoint 3's row
        await settle(pilot)
        assert cp_of(app).number == 3
        assert app.focused.id == "files", "a click opens the checkpoint's files"
        await pilot.click("#timeline", offset=(10, 1))  # checkpoint 1, back in the timeline
        await settle(pilot)
        assert cp_of(app).number == 1


@pilot_test
async def test_what_the_store_says_reaches_the_terminal_escaped(demo):
    home, workdir = demo
    (workdir / "x.txt").write_text("x\n")
    take(Store(Layout.for_home(home)), workdir, "before: \x1b]0;pwned\x07 rm -rf /")
    app = make_app(home, workdir)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        row = str(app.timeline.list.get_option(app.timeline.order[0]).prompt)
        assert "\x1b" not in row and "\x07" not in row
        assert "\\x1b]0;pwned\\x07 rm -rf /" in row
        assert "\x1b" not in screen_text(app)


@pilot_test
async def test_g_restores_the_checkpoint_and_the_repository(home, tmp_path):
    """`g`: the whole checkpoint and .git as it recorded them, its plan shown first."""
    from gitrepos import git, rich_repository, state

    from rewindfs.store.projectgit import Recorder

    project = rich_repository(tmp_path)
    before = state(project)
    take(Store(Layout.for_home(home)), project, "before", recorder=Recorder())
    git(project, "branch", "-D", "feature")
    app = make_app(home, project)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        shown = screen_text(app)
        assert "and .git" in shown and "branches: feature" in shown, shown
        assert "feature" not in git(project, "branch")  # nothing yet: the plan only
        await pilot.press("y")
        await settle(pilot)
        assert status(app).startswith("restored"), status(app)
    assert state(project) == before
