"""`rewind ui` carries out a plan as it showed it, or refuses (issue 41): `u` undoes the
restore its plan named (another shell's restore since: refused), `r` and `t` change
nothing they did not show, and a refused restore leaves `u` to take back the one before
it. Driven by textual's pilot on real stores, the other shell a real `rewind`."""

from __future__ import annotations

from uihelp import make_app, pilot_test, screen_text, settle, status, uidemo

from rewindfs.ui.dialogs import Confirm


async def restore_notes(pilot, app) -> None:
    """Restore notes.md (deleted since checkpoint 1) from checkpoint 1's files, on `y`."""
    await pilot.press("enter", "j")
    await settle(pilot)
    assert app.files_pane.selected.path == b"notes.md"
    await pilot.press("r")
    await settle(pilot)
    await pilot.press("y")
    await settle(pilot)
    assert status(app).startswith("restored notes.md to"), status(app)


async def ask(pilot, app, key: str) -> str:
    """Press `key`: the plan and its question, as shown."""
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(app.screen, Confirm), status(app)
    return screen_text(app)


@pilot_test
async def test_u_undoes_the_restore_its_plan_named_or_refuses(demo, run_rewind):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await restore_notes(pilot, app)
        shown = await ask(pilot, app, "u")
        assert "delete 1: notes.md" in shown, shown
        # Another shell restores app.py meanwhile: the last restore is that one now.
        other = run_rewind("restore", "3", "app.py", "-y", cwd=workdir)
        assert other.returncode == 0, other.stderr
        assert (workdir / "app.py").read_bytes() == uidemo.FILES["app.py"]
        await pilot.press("y")
        await settle(pilot)
        said = status(app)
        assert "nothing was undone" in said, said
        assert (workdir / "notes.md").read_bytes() == uidemo.FILES["notes.md"]
        assert (workdir / "app.py").read_bytes() == uidemo.FILES["app.py"]
        shown = await ask(pilot, app, "u")  # asked again: the plan of the other shell's
        assert "overwrite 1: app.py" in shown and "delete 1: notes.md" not in shown, shown


@pilot_test
async def test_r_refuses_a_change_its_plan_did_not_show(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("j", "j")  # the first checkpoint
        await settle(pilot)
        shown = await ask(pilot, app, "r")
        assert "overwrite 1: app.py" in shown and "create 1: notes.md" in shown, shown
        assert "README.md" not in shown
        (workdir / "README.md").write_text("edited in another window\n")  # not in the plan
        await pilot.press("y")
        await settle(pilot)
        said = status(app)
        assert "did not confirm" in said and "overwrite README.md" in said, said
    assert (workdir / "README.md").read_text() == "edited in another window\n"
    assert not (workdir / "notes.md").exists()


@pilot_test
async def test_a_refused_restore_leaves_u_to_undo_the_one_before(demo):
    home, workdir = demo
    app = make_app(home, workdir, clock=lambda: uidemo.NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await restore_notes(pilot, app)
        await pilot.press("escape")
        await settle(pilot)
        await ask(pilot, app, "r")  # checkpoint 1, whole: app.py back
        (workdir / "later.txt").write_text("a file it would now also delete\n")
        await pilot.press("y")
        await settle(pilot)
        assert "nothing was restored" in status(app), status(app)
        shown = await ask(pilot, app, "u")
        assert "delete 1: notes.md" in shown, shown  # the restore before the refused one
        await pilot.press("y")
        await settle(pilot)
        assert status(app).startswith("undid the last restore"), status(app)
    assert not (workdir / "notes.md").exists()
    assert (workdir / "later.txt").exists()


@pilot_test
async def test_t_refuses_a_step_begun_since_its_plan(home, project, mgr):
    mgr.begin_step(str(project), "s1", "turn-1")
    (project / "README.md").write_text("changed by the agent\n")
    mgr.end_step(str(project), "s1")
    app = make_app(home, project)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        shown = await ask(pilot, app, "t")
        assert "revert turn(s) turn-1 (1 step(s))" in shown, shown
        mgr.begin_step(str(project), "s2", "turn-2")  # the agent goes on meanwhile
        (project / "docs" / "guide.txt").write_text("changed in turn 2\n")
        mgr.end_step(str(project), "s2")
        await pilot.press("y")
        await settle(pilot)
        said = status(app)
        assert "nothing was reverted" in said, said
    assert (project / "README.md").read_text() == "changed by the agent\n"
    assert (project / "docs" / "guide.txt").read_text() == "changed in turn 2\n"
