"""`rewind checkpoint` records the project's `.git`, `rewind restore N --git` gives it back
(recreated whole, or its refs, HEAD, index and stash set back), `rewind undo` moves it
back again; a plain restore never touches `.git` and says when it differs; what cannot
be recorded or written safely is refused in one line and changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from gitrepos import GIT_ENV, fsck, git, rich_repository, state


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return rich_repository(tmp_path)


def _checkpoint(run_rewind, project: Path, *args: str) -> str:
    done = run_rewind("checkpoint", "-m", "before", *args, cwd=project, check=True)
    return done.stdout


def test_rm_rf_git_recreated_whole_then_undone(repo: Path, run_rewind) -> None:
    before = state(repo)
    said = _checkpoint(run_rewind, repo)
    assert "repository state recorded (" in said and "history copied into the store" in said
    subprocess.run(["rm", "-rf", ".git"], cwd=repo, check=True)
    assert state(repo) == {"repository": False}

    done = run_rewind("restore", "1", "--git", "--yes", cwd=repo, check=True).stdout
    assert "repository recreated" in done, done
    assert state(repo) == before
    assert fsck(repo) == ""
    assert git(repo, "tag", "-l", "-n1") .split() == ["light", "commit", "2", "v1",
                                                        "release", "one"]

    undone = run_rewind("undo", cwd=repo, check=True).stdout
    assert "removed" in undone and not (repo / ".git").exists()
    run_rewind("undo", cwd=repo, check=True)  # the undo is itself undone: back again
    assert state(repo) == before


def test_refs_set_back_in_a_repository_that_lost_them(repo: Path, run_rewind) -> None:
    before = state(repo)
    feature = git(repo, "rev-parse", "feature").strip()
    _checkpoint(run_rewind, repo)
    git(repo, "branch", "-D", "feature")
    git(repo, "stash", "drop")
    git(repo, "tag", "-d", "v1")
    git(repo, "reset", "--hard", "-q", "HEAD~2")
    git(repo, "gc", "-q", "--prune=now")
    assert subprocess.run(["git", "cat-file", "-e", feature], cwd=repo, env=GIT_ENV
                          ).returncode != 0   # really gone from the repository
    after = state(repo)

    done = run_rewind("restore", "1", "--git", "--yes", cwd=repo, check=True).stdout
    assert "repository set back" in done and "feature" in done, done
    assert state(repo) == before
    assert fsck(repo) == ""
    run_rewind("undo", cwd=repo, check=True)
    assert state(repo) == after
    assert fsck(repo) == ""


def test_a_detached_head_comes_back_detached(repo: Path, run_rewind) -> None:
    git(repo, "checkout", "-q", "--detach")   # (at HEAD: the unstaged work stays)
    before = state(repo)
    assert git(repo, "symbolic-ref", "-q", "HEAD", check=False) == ""   # detached
    _checkpoint(run_rewind, repo)
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-D", "feature")
    run_rewind("restore", "1", "--git", "--yes", cwd=repo, check=True)
    assert state(repo) == before
    assert fsck(repo) == ""


def test_a_dry_run_with_git_changes_nothing(repo: Path, run_rewind) -> None:
    _checkpoint(run_rewind, repo)
    git(repo, "branch", "-D", "feature")
    (repo / "app.py").write_text("changed since\n")
    after = state(repo)
    files = (repo / "app.py").read_bytes()
    done = run_rewind("restore", "1", "--git", "--dry-run", cwd=repo, check=True).stdout
    assert "nothing was changed" in done and "feature" in done, done
    assert state(repo) == after and (repo / "app.py").read_bytes() == files
    assert json.loads(run_rewind("list", "--json", cwd=repo, check=True).stdout)[0][
        "reason"] == "before"   # no pre-rollback snapshot either


def test_plain_restore_never_touches_git_and_names_the_option(repo: Path, run_rewind) -> None:
    _checkpoint(run_rewind, repo)
    git(repo, "branch", "-D", "feature")
    after = state(repo)
    done = run_rewind("restore", "1", "--yes", cwd=repo, check=True).stdout
    assert state(repo) == after
    [hint] = [line for line in done.splitlines() if "--git" in line]
    assert "refs differ" in hint and "feature" in hint and "rewind restore 1 --git" in hint
    subprocess.run(["rm", "-rf", ".git"], cwd=repo, check=True)
    done = run_rewind("restore", "1", "--yes", cwd=repo, check=True).stdout
    assert not (repo / ".git").exists()
    assert "is missing: `rewind restore 1 --git` brings it back" in done, done


def test_unchanged_repository_copies_nothing_and_new_work_only_itself(repo: Path,
                                                                       run_rewind) -> None:
    first = _copied(_checkpoint(run_rewind, repo))
    again = _checkpoint(run_rewind, repo)
    assert "unchanged, nothing copied" in again, again
    (repo / "new.py").write_text("n = 1\n")
    git(repo, "add", "new.py")
    git(repo, "commit", "-q", "-m", "one more")
    said = _checkpoint(run_rewind, repo)
    # The commit, its tree, the blob (and the bases git's thin pack deltas need).
    assert "new objects:" in said and 3 <= _copied(said) < first, said


def _copied(said: str) -> int:
    """How many objects the closing note says were copied."""
    return int(said.split(": ")[-1].split(" objects")[0].replace(",", ""))


def test_show_lists_the_branch_tips(repo: Path, run_rewind) -> None:
    _checkpoint(run_rewind, repo)
    shown = run_rewind("show", "1", cwd=repo, check=True).stdout
    main, feature = (git(repo, "rev-parse", b).strip()[:8] for b in ("main", "feature"))
    assert f"branches: feature {feature}, main {main}" in shown, shown
    assert "HEAD -> main" in shown and "2 stash(es)" in shown
    report = json.loads(run_rewind("show", "1", "--json", cwd=repo, check=True).stdout)
    assert report["git"]["branches"]["main"].startswith(main)


def test_no_git_and_a_checkpoint_without_state(repo: Path, run_rewind) -> None:
    said = _checkpoint(run_rewind, repo, "--no-git")
    assert "repository" not in said
    done = run_rewind("restore", "1", "--git", "--yes", cwd=repo)
    assert done.returncode == 1 and "recorded no repository state" in done.stderr
    assert "nothing was changed" in done.stderr


@pytest.mark.parametrize("kind", ["worktree", "symlink", "shallow", "oversize"])
def test_refused_in_one_line(kind: str, tmp_path: Path, repo: Path, run_rewind,
                             child_env) -> None:
    env = {}
    if kind == "worktree":
        git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
        project = tmp_path / "wt"
        why = "is a file (a linked worktree"
    elif kind == "symlink":
        project = tmp_path / "linked"
        project.mkdir()
        (project / ".git").symlink_to(repo / ".git")
        why = "is a symbolic link"
    elif kind == "shallow":
        project = tmp_path / "shallow"
        git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(project))
        why = "a shallow clone"
    else:
        project, env = repo, {"REWIND_MAX_GIT_SIZE_MB": "0"}
        why = "over max_git_size_mb (0)"
    (project / "file.txt").write_text("x\n")
    said = run_rewind("checkpoint", cwd=project, env=env, check=True).stdout
    [line] = [x for x in said.splitlines() if x.startswith("repository state not recorded")]
    assert why in line, said
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    assert "Rewind-Git-State" not in listed[0]["trailers"]


def test_submodules_said(repo: Path, tmp_path: Path, run_rewind) -> None:
    (repo / ".git" / "modules" / "lib").mkdir(parents=True)
    said = _checkpoint(run_rewind, repo)
    assert "submodules' own repositories (.git/modules) are not recorded" in said, said


@pytest.mark.parametrize("planted", ["refs", "objects/pack", "logs"])
def test_a_crafted_git_never_chooses_where_a_restore_writes(planted: str, repo: Path,
                                                            tmp_path: Path, run_rewind
                                                            ) -> None:
    _checkpoint(run_rewind, repo)
    (repo / "app.py").write_text("edited since\n")  # what a restore that went on rewrites
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = repo / ".git" / planted
    subprocess.run(["rm", "-rf", str(target)], check=True)
    target.symlink_to(elsewhere)
    head, index = (repo / ".git" / "HEAD").read_bytes(), (repo / ".git" / "index").read_bytes()
    work = (repo / "app.py").read_text()
    listed = run_rewind("list", "--json", cwd=repo, check=True).stdout
    done = run_rewind("restore", "1", "--git", "--yes", cwd=repo)
    assert done.returncode != 0, done.stdout
    assert "never writes through it; nothing was changed" in done.stderr, done.stderr
    assert list(elsewhere.iterdir()) == []
    assert (repo / "app.py").read_text() == work   # refused before anything changed
    assert run_rewind("list", "--json", cwd=repo, check=True).stdout == listed
    assert (repo / ".git" / "HEAD").read_bytes() == head
    assert (repo / ".git" / "index").read_bytes() == index


def test_a_running_git_makes_it_busy(repo: Path, run_rewind) -> None:
    _checkpoint(run_rewind, repo)
    git(repo, "branch", "-D", "feature")
    after = state(repo)
    (repo / ".git" / "index.lock").write_text("")
    done = run_rewind("restore", "1", "--git", "--yes", cwd=repo)
    assert done.returncode == 4 and "index.lock exists" in done.stderr, done.stderr
    os.unlink(repo / ".git" / "index.lock")
    assert state(repo) == after
