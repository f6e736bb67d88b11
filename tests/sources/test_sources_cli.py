"""`rewind` on Kilo Code's and OpenCode's steps: list, show, cat, log, diff, restore (and
undo), import; steps gc'd away show as gone. Data made as the agents make it
(agentdata.py); the real CLIs are driven in test_sources_agents.py."""

from __future__ import annotations

import json
import subprocess

import pytest
from agentdata import AgentData, sample
from conftest import isolated_git_env, wait_for


def rewind_in(data, run_rewind):
    def run(*args, check=True, **kw):
        return run_rewind(*args, cwd=data.project, env=data.env, check=check, **kw)
    return run


def agent_git(data, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(data.gitdir), *args], capture_output=True,
                          text=True, check=True, env=isolated_git_env()).stdout


@pytest.fixture
def kilo(tmp_path):
    return sample(tmp_path, "kilo")


def test_list_show_cat_log_diff(kilo, run_rewind):
    rewind = rewind_in(kilo, run_rewind)
    entries = json.loads(rewind("list", "--agent", "kilo", "--json").stdout)
    assert [(e["short_ref"], e["step"], e["files"], e["gone"]) for e in entries] == [
        ("kilo:1", "2.1", ["b.txt"], False), ("kilo:2", "1.2", ["a.txt"], False),
        ("kilo:3", "1.1", ["new.txt"], False)]
    assert entries[0]["prompt"] == "delete b" and entries[0]["session_title"] == \
        "Tidy the project"
    human = rewind("list", "--agent", "kilo").stdout
    assert "kilo:1" in human and "delete b" in human and "b.txt" in human
    for ref in (entries[0]["ref"], "kilo:1", f"kilo:{entries[0]['session']}/2.1"):
        assert rewind("cat", ref, "b.txt").stdout == "bye\n"
        assert rewind("show", f"{ref}:b.txt").stdout == "bye\n"
        shown = json.loads(rewind("show", ref, "--json").stdout)
        assert (shown["step"], shown["files_changed"], shown["deletions"]) == ("2.1", 1, 1)
    log = json.loads(rewind("log", "--agent", "kilo", "a.txt", "--json").stdout)
    assert [(e["short_ref"], e["status"]) for e in log] == [("kilo:2", "modified")]
    assert json.loads(rewind("log", "kilo:2", "b.txt", "--json").stdout) == []
    assert "deleted" in rewind("log", "kilo:1", "b.txt").stdout
    between = rewind("diff", "kilo:3", "kilo:1", "--name-only").stdout.split()
    assert between == ["a.txt", "new.txt"]
    (kilo.project / "a.txt").write_text("mine\n")
    to_worktree = rewind("diff", "kilo:1").stdout
    assert "-hello edited" in to_worktree and "+mine" in to_worktree and "-bye" in to_worktree


def test_bad_references_are_one_line(kilo, run_rewind):
    rewind = rewind_in(kilo, run_rewind)
    for ref, code, says in (("kilo:9", 1, "no kilo:9: Kilo Code has 3 step(s)"),
                            ("kilo:ses_nothere/1.1", 1, "no Kilo Code session"),
                            ("opencode:1", 1, "no OpenCode sessions")):
        proc = rewind("show", ref, check=False)
        assert proc.returncode == code, proc.stderr
        assert says in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    proc = rewind("restore", "3", "--revert", check=False)
    assert proc.returncode == 2 and "--revert is for kilo:/opencode: steps" in proc.stderr


def test_restore_a_step_then_undo(kilo, run_rewind):
    rewind = rewind_in(kilo, run_rewind)
    assert not (kilo.project / "b.txt").exists()
    (kilo.project / "mine.txt").write_text("a person's file\n")
    out = json.loads(rewind("restore", "kilo:1", "--yes", "--json").stdout)
    assert out["success"] and out["pre_rollback"]
    assert (kilo.project / "b.txt").read_text() == "bye\n"
    assert not (kilo.project / "mine.txt").exists()  # the whole project as the step found it
    rewind("undo")
    assert not (kilo.project / "b.txt").exists()
    assert (kilo.project / "mine.txt").read_text() == "a person's file\n"
    rewind("restore", "kilo:3", "a.txt")  # one file
    assert (kilo.project / "a.txt").read_text() == "hello\n"
    assert (kilo.project / "new.txt").exists() and (kilo.project / "mine.txt").exists()
    rewind("undo")
    assert (kilo.project / "a.txt").read_text() == "hello edited\n"


def test_revert_to_here_as_the_agent_does(kilo, run_rewind):
    """--revert from step 1.2: files it and the later steps changed go back (a.txt
    unedited, b.txt back), files they did not touch stay, mine included."""
    rewind = rewind_in(kilo, run_rewind)
    (kilo.project / "mine.txt").write_text("kept\n")
    plan = json.loads(rewind("restore", "kilo:2", "--revert", "--dry-run", "--json").stdout)
    assert plan["plan"]["overwrite"] == 1 and plan["plan"]["create"] == 1
    rewind("restore", "kilo:2", "--revert", "--yes")
    assert (kilo.project / "a.txt").read_text() == "hello\n"
    assert (kilo.project / "b.txt").read_text() == "bye\n"
    assert (kilo.project / "new.txt").read_text() == "created by agent\n"  # step 1.1's: kept
    assert (kilo.project / "mine.txt").read_text() == "kept\n"
    rewind("restore", "kilo:3", "--revert", "--yes")  # from the first step: new.txt goes
    assert not (kilo.project / "new.txt").exists()
    rewind("undo")
    rewind("undo", "--steps", "1")
    assert (kilo.project / "a.txt").read_text() == "hello edited\n"
    assert not (kilo.project / "b.txt").exists()


def test_revert_keeps_what_another_session_changed_after(tmp_path, run_rewind):
    """Two Kilo Code sessions in one project (issue 45): --revert from the first one's
    step takes back its own files; the file the other session changed after it keeps
    the other session's bytes and is named (output and --json)."""
    data = AgentData(tmp_path, "kilo")
    one, two = data.session("one"), data.session("two")
    data.turn("write two files", one)
    data.step(lambda p: ((p / "shared.txt").write_text("one\n"),
                         (p / "mine.txt").write_text("one's\n")), session=one)
    data.turn("append", two)
    data.step(lambda p: (p / "shared.txt").write_text("one\ntwo\n"), session=two)
    data.save()
    rewind = rewind_in(data, run_rewind)
    entries = json.loads(rewind("list", "--agent", "kilo", "--json").stdout)
    ref = next(e["short_ref"] for e in entries if "mine.txt" in e["files"])
    plan = json.loads(rewind("restore", ref, "--revert", "--dry-run", "--json").stdout)
    assert [k["path"] for k in plan["kept"]] == ["shared.txt"]
    out = rewind("restore", ref, "--revert", "--yes").stdout
    assert f"kept: shared.txt (kilo session {two.id} changed it after" in out, out
    assert not (data.project / "mine.txt").exists()
    assert (data.project / "shared.txt").read_text() == "one\ntwo\n"
    rewind("undo")
    assert (data.project / "mine.txt").read_text() == "one's\n"


def test_gone_steps_and_import_survives_the_agents_gc(kilo, run_rewind, store_git, fsck):
    rewind = rewind_in(kilo, run_rewind)
    imported = json.loads(rewind("import", "kilo", "--json").stdout)
    session = json.loads(rewind("list", "--agent", "kilo", "--json").stdout)[0]["session"]
    assert sorted(c["label"] for c in imported["created"]) == sorted(
        f"kilo-{session}-{what}" for what in ("1.1", "1.2", "2.1", "end"))
    again = json.loads(rewind("import", "kilo", "--json").stdout)
    assert again["created"] == [] and len(again["kept"]) == 4
    agent_git(kilo, "gc", "-q", "--prune=now")  # no pins: every snapshot tree goes
    assert agent_git(kilo, "count-objects").startswith("0 objects")
    listed = json.loads(rewind("list", "--agent", "kilo", "--json").stdout)
    # The first step found the project as committed: its project's own .git still has it.
    assert [e["gone"] for e in listed] == [True, True, False]
    assert "gone" in rewind("list", "--agent", "kilo").stdout
    proc = rewind("restore", "kilo:1", "--yes", check=False)
    assert proc.returncode == 1 and "is gone" in proc.stderr and proc.stderr.count("\n") == 1
    shown = rewind("show", "kilo:1").stdout
    assert "gone" in shown
    # Ours still has every one of them, labelled, and restores it.
    ours = json.loads(rewind("list", "--json").stdout)
    labels = {label: e["hash"] for e in ours for label in e["labels"]}
    rewind("restore", f"kilo-{session}-2.1", "--yes")
    assert (kilo.project / "b.txt").read_text() == "bye\n"
    rewind("restore", f"kilo-{session}-end", "--yes")
    assert not (kilo.project / "b.txt").exists()
    store_git("gc", "-q", "--prune=now")
    assert all(store_git("cat-file", "-e", commit).returncode == 0
               for commit in labels.values())
    fsck()


def test_a_partly_gone_tree_is_never_copied(kilo, run_rewind, fsck):
    rewind = rewind_in(kilo, run_rewind)
    # new.txt exists only in the agent's snapshots (b.txt is in the project's .git too).
    blob = agent_git(kilo, "rev-parse", f"{kilo.sessions[0].turns[1].steps[0].start}:new.txt")
    blob = blob.strip()
    (kilo.gitdir / "objects" / blob[:2] / blob[2:]).unlink()
    proc = rewind("restore", "kilo:1", "--yes", check=False)
    assert proc.returncode == 1 and "incomplete" in proc.stderr
    assert "nothing was changed" in proc.stderr and not (kilo.project / "b.txt").exists()
    out = json.loads(rewind("import", "kilo", "--json").stdout)
    session = kilo.sessions[0].id
    assert set(out["gone"]) == {f"kilo-{session}-{s}" for s in ("1.2", "2.1", "end")}
    assert [c["label"] for c in out["created"]] == [f"kilo-{session}-1.1"]
    fsck()


def test_moved_project_restores_in_its_new_place(kilo, run_rewind, tmp_path):
    moved = tmp_path / "moved-project"
    kilo.project.rename(moved)
    proc = run_rewind("list", "--agent", "kilo", cwd=moved, env=kilo.env, check=True)
    assert f"recorded it at {kilo.project}" in proc.stdout
    run_rewind("restore", "kilo:1", "b.txt", cwd=moved, env=kilo.env, check=True)
    assert (moved / "b.txt").read_text() == "bye\n"


def test_automatic_import_on_any_command(kilo, run_rewind):
    """auto_import: [kilo]: a rewind command imports Kilo's new snapshots in a detached
    child, and again after Kilo took more."""
    env = {**kilo.env, "REWIND_AUTO_IMPORT": "kilo"}

    def labels() -> set[str]:
        proc = run_rewind("list", "--json", cwd=kilo.project, env=kilo.env)
        return {label for e in json.loads(proc.stdout or "[]") for label in e["labels"]} \
            if proc.returncode == 0 else set()

    run_rewind("status", cwd=kilo.project, env=env, check=True)
    session = kilo.sessions[0].id
    wait_for(lambda: f"kilo-{session}-end" in labels(), "the background import")
    assert len(labels()) == 4
    kilo.turn("more")
    kilo.step(lambda p: (p / "c.txt").write_text("c\n"))
    kilo.save()
    run_rewind("status", cwd=kilo.project, env=env, check=True)
    wait_for(lambda: f"kilo-{session}-3.1" in labels(), "the next background import")
    proc = run_rewind("config", "--json", cwd=kilo.project,
                      env={**kilo.env, "REWIND_AUTO_IMPORT": "claude"})
    assert proc.returncode == 1 and "unknown agent 'claude'" in proc.stderr
