"""Consistency (issue 15): the same -C DIR everywhere, an explicit DIR inside a project
names that project, contradictory flags refused, unknown settings warned about with
the closest known key, list-valued REWIND_EXTRA_EXCLUDES, documented exit codes."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from rewindfs.store import take

PROJECT_COMMANDS = [  # (command, arguments after it) that work on one project
    ("checkpoint", []), ("list", []), ("diff", []), ("restore", ["1", "--dry-run"]),
    ("undo", ["--list"]), ("show", []), ("log", ["README.md"]), ("cat", ["1", "README.md"]),
    ("grep", ["sample"]), ("label", []), ("revert", ["nosuchstep"]), ("redo", []),
    ("delete", ["1", "--help"]), ("forget", ["--help"]),
]


def test_every_project_command_takes_the_same_dash_c(run_rewind, project, tmp_path):
    (project / "pyproject.toml").write_text("[project]\nname='x'\n")
    run_rewind("checkpoint", project, check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for command, args in PROJECT_COMMANDS:
        help_text = run_rewind(command, "--help", check=True).stdout
        assert "-C, --dir DIR" in help_text or "-C, --project DIR" in help_text, command
        proc = run_rewind(command, *args, "-C", project, cwd=elsewhere)
        assert "no such option" not in proc.stderr, (command, proc.stderr)
        assert "Traceback" not in proc.stderr
        if command not in ("revert", "redo"):  # no agent steps were recorded
            assert proc.returncode == 0, (command, proc.stderr)
    assert "-C, --project DIR" in run_rewind("mount", "--help", check=True).stdout


def test_explicit_dir_inside_a_project_names_the_project(run_rewind, project):
    (project / "pyproject.toml").write_text("[project]\nname='x'\n")
    run_rewind("checkpoint", project, check=True)
    src = project / "src"
    (src / "pkg" / "core.py").write_text("changed\n")
    # `rewind checkpoint .` in src/ used to start a nested project there
    proc = run_rewind("checkpoint", ".", "--json", cwd=src, check=True)
    assert json.loads(proc.stdout)["directory"] == str(project.resolve())
    proc = run_rewind("checkpoint", "-C", "pkg", "--json", cwd=src, check=True)
    assert json.loads(proc.stdout)["directory"] == str(project.resolve())
    data = json.loads(run_rewind("list", "--all-projects", "--json", check=True).stdout)
    assert [d["directory"] for d in data] == [str(project.resolve())]
    listed = run_rewind("list", src / "pkg", "--json", check=True).stdout
    assert len(json.loads(listed)) == 2


def test_dir_given_twice_differently_is_refused(run_rewind, project, tmp_path):
    proc = run_rewind("list", project, "-C", tmp_path)
    assert proc.returncode == 2 and "give the directory once" in proc.stderr


@pytest.mark.parametrize("args", [
    ("restore", "1", "--safe", "--all"),
    ("restore", "1", "--to", "/tmp/x", "--safe"),
    ("diff", "--stat", "--name-only"),
    ("undo", "--list", "--steps", "2"),
    ("label", "-d"),
])
def test_contradictory_flags_are_refused(run_rewind, project, store, args):
    take(store, project, "first")
    proc = run_rewind(*args, "-C", project)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "cannot be used together" in proc.stderr or "give just the label" in proc.stderr


def test_unknown_setting_warned_with_the_closest_key(run_rewind, project, home):
    (home / "config.yaml").write_text("checkpoints:\n  max_snapshot: 5\n  frobnicate: 1\n")
    proc = run_rewind("config", "--json", env={"REWIND_MAX_FILE": "3"}, check=True)
    lines = proc.stderr.splitlines()
    assert any("unknown setting checkpoints.max_snapshot" in line
               and "did you mean max_snapshots?" in line for line in lines), lines
    assert any("checkpoints.frobnicate" in line and "(ignored)" in line for line in lines)
    assert any("$REWIND_MAX_FILE " in line and "REWIND_MAX_FILES?" in line for line in lines)
    assert all(line.startswith("rewind: warning: ") for line in lines)
    assert json.loads(proc.stdout)["settings"]["max_snapshots"]["value"] == 20


def test_extra_excludes_env_accepts_a_yaml_or_json_list(run_rewind, project):
    (project / "keep.txt").write_text("k\n")
    (project / "drop.log").write_text("d\n")
    (project / "scratch").mkdir()
    (project / "scratch" / "x.txt").write_text("x\n")
    for value in ('["*.log", "scratch/"]', "[ '*.log', scratch/ ]", "*.log,scratch/"):
        shown = json.loads(run_rewind("config", "--json", env={"REWIND_EXTRA_EXCLUDES": value},
                                      check=True).stdout)
        assert shown["settings"]["extra_excludes"]["value"] == ["*.log", "scratch/"], value
    run_rewind("checkpoint", project, env={"REWIND_EXTRA_EXCLUDES": '["*.log", "scratch/"]'},
               check=True)
    files = run_rewind("grep", "-l", ".", "-C", project, check=True).stdout
    assert "1:keep.txt" in files and "drop.log" not in files and "scratch" not in files
    bad = run_rewind("config", env={"REWIND_EXTRA_EXCLUDES": "[1, 2"})
    assert bad.returncode == 1 and "REWIND_EXTRA_EXCLUDES" in bad.stderr


def test_dry_run_json_reports_success(run_rewind, project, store, tmp_path):
    take(store, project, "first")
    (project / "README.md").write_text("changed\n")
    for args in (("restore", "1", "--dry-run", "--json"),
                 ("restore", "1", "--dry-run", "--json", "--to", tmp_path / "out")):
        proc = run_rewind(*args, "-C", project)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert data["success"] is True and data["dry_run"] is True
    assert not (tmp_path / "out").exists()


def test_busy_umount_exits_4(store, project, mount, mnt, run_rewind):  # noqa: F811
    take(store, project, "first")
    mount()
    inside = subprocess.Popen(["sleep", "600"], cwd=mnt / "proj" / "latest")
    try:
        proc = run_rewind("umount", str(mnt))
        assert proc.returncode == 4, proc.stderr
        assert "busy" in proc.stderr and len(proc.stderr.splitlines()) == 1
    finally:
        inside.kill()
        inside.wait()
    run_rewind("umount", str(mnt), check=True)
    assert not os.path.ismount(mnt)
