"""A project with a git repository worth losing, and its whole state read by git itself:
for the tests of `rewind restore N --git` (tests/restore/test_restore_git.py, and through
the agents' hooks: tests/hooks/test_hooks_git_state.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import isolated_git_env

GIT_ENV = isolated_git_env(GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
                           GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com",
                           GIT_AUTHOR_DATE="2024-01-02T03:04:05Z",
                           GIT_COMMITTER_DATE="2024-01-02T03:04:05Z")


def git(cwd: Path, *args: str, check: bool = True, stdin: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True,
                          text=True, input=stdin)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout


def rich_repository(tmp_path: Path) -> Path:
    """tmp_path/proj: five commits on main, a branch `feature` whose commit is on no other
    ref and in no reflog (so `branch -D` + `gc --prune=now` destroys it), an annotated
    and a lightweight tag, a remote with its remote-tracking refs, a note, two stashes,
    a hook, and staged work with unstaged changes on top of it."""
    remote = tmp_path / "remote.git"
    project = tmp_path / "proj"
    project.mkdir()
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "init", "-q", "-b", "main")
    for i in range(1, 6):
        (project / "app.py").write_text(f"version = {i}\n")
        (project / f"module{i}.py").write_text(f"x = {i}\n")
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", f"commit {i}")
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "origin", "main")
    git(project, "fetch", "-q", "origin")
    tree = git(project, "rev-parse", "HEAD^{tree}").strip()
    feature = git(project, "commit-tree", "-p", "HEAD", "-m", "feature work", tree).strip()
    git(project, "branch", "feature", feature)
    git(project, "tag", "-a", "v1", "-m", "release one", "HEAD~1")
    git(project, "tag", "light", "HEAD~3")
    git(project, "notes", "add", "-m", "a note", "HEAD~2")
    for text in ("stashed one\n", "stashed two\n"):
        (project / "app.py").write_text(text)
        git(project, "stash", "-q")
    hook = project / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    (project / "staged.py").write_text("staged = True\n")
    (project / "app.py").write_text("version = 'staged'\n")
    git(project, "add", "staged.py", "app.py")
    (project / "app.py").write_text("version = 'unstaged, on top'\n")
    return project


def state(project: Path) -> dict[str, object]:
    """Everything of the repository a restore must give back, as git reports it."""
    if not (project / ".git").exists():
        return {"repository": False}
    return {
        "refs": git(project, "for-each-ref", "--format=%(objectname) %(refname)"),
        "head": git(project, "symbolic-ref", "-q", "HEAD", check=False) or
        git(project, "rev-parse", "HEAD"),
        "stash": git(project, "stash", "list", "--format=%H %gs"),
        "index": git(project, "ls-files", "-s"),
        "staged": git(project, "diff", "--cached"),
        "commits": sorted(git(project, "rev-list", "--all", "--reflog").split()),
        "remotes": git(project, "remote", "-v"),
        "config": (project / ".git" / "config").read_text(),
        "hook": _mode(project / ".git" / "hooks" / "pre-commit"),
    }


def fsck(project: Path) -> str:
    """`git fsck --strict`'s complaints ('' when clean; dangling objects are no fault)."""
    done = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=project,
                          env=GIT_ENV, capture_output=True, text=True)
    said = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                     if not line.startswith(("Checking", "notice:")))
    return said if done.returncode or said else ""


def _mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        return None
