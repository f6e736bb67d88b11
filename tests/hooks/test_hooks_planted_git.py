"""A `git` planted in the project never runs (issue 33, case 7): the agent's PATH holds the
project's own `bin/` (as direnv's or npm's do), and the hooks' checkpoints start the
store's workers (here the automatic push, which runs git). Whether the hook takes the
checkpoint itself or its helper does, the workers find git only outside the project:
the planted one, which would log every call, is never called while the pushes land."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import isolated_git_env, wait_for
from hookproc import auto_push_to, claude_payload, hook_env, log_lines, run_hook

from rewindfs.hooks import helper

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]

PLANTED = '#!/bin/sh\necho "$@" >> {log}\nexec {git} "$@"\n'


def pushed(remote: Path) -> list[str]:
    """The reasons of the checkpoints on the remote (a copy of each: other ids)."""
    done = subprocess.run(["git", "log", "--all", "--format=%s"], capture_output=True,
                          text=True, env=isolated_git_env(GIT_DIR=str(remote)), check=True)
    return done.stdout.splitlines()


def test_a_git_planted_in_the_project_never_runs(project: Path, home: Path, tmp_path: Path,
                                                 run_rewind) -> None:
    (project / "package.json").write_text("{}\n")
    planted_log = tmp_path / "planted-git-ran"
    (project / "bin").mkdir()
    git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True,
                         check=True).stdout.strip()
    (project / "bin" / "git").write_text(PLANTED.format(log=planted_log, git=git))
    (project / "bin" / "git").chmod(0o755)
    remote = tmp_path / "remote.git"
    auto_push_to(remote, home, run_rewind)
    env = hook_env(home, PATH=f"{project / 'bin'}:{os.environ['PATH']}",
                   REWIND_HOOK_HELPER_IDLE="60")
    # The scenario: on this PATH, `git` is the planted one.
    assert subprocess.run(["sh", "-c", "command -v git"], env=env, capture_output=True,
                          text=True).stdout.strip() == str(project / "bin" / "git")

    run_hook("claude-code", claude_payload(project, "rm -rf build", call="t1"), project, env)
    wait_for(lambda: "before: rm -rf build" in pushed(remote), "the first push", 120)
    wait_for(lambda: helper.running(home / "rewind-hooks") is not None, "the helper")
    (project / "README.md").write_text("changed\n")
    run_hook("claude-code", claude_payload(project, "rm -rf dist", call="t2"), project, env)
    assert "by the helper" in log_lines(home)[-1]
    wait_for(lambda: "before: rm -rf dist" in pushed(remote), "the helper's push", 120)
    assert not planted_log.exists(), planted_log.read_text()
