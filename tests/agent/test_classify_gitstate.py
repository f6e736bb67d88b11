"""Table-driven tests for rewindfs.agent.classify.gitstate: which commands can destroy the
repository's own state (refs, HEAD, the index, objects), so the checkpoint before them
records it; and that the classifier names them (a checkpoint is taken before each)."""

from __future__ import annotations

import pytest

from rewindfs.agent.classify import classify
from rewindfs.agent.classify.gitstate import destroys_git_state

DESTROYS = [
    # the list
    "rm -rf .git",
    "rm -rf .git/refs",
    "rm .git/index",
    "git reset --hard HEAD~2",
    "git reset --merge",
    "git reset --keep HEAD^",
    "git reset",
    "git checkout -f main",
    "git checkout -- .",
    "git checkout HEAD~1 -- src/app.py",
    "git switch -f main",
    "git switch --discard-changes main",
    "git switch -C main origin/main",
    "git restore --staged .",
    "git restore src/app.py",
    "git clean -fdx",
    "git branch -D feature",
    "git branch -d feature",
    "git branch -f main HEAD~3",
    "git branch -m old new",
    "git branch --delete feature",
    "git tag -d v1",
    "git tag -f v1 HEAD~1",
    "git stash drop",
    "git stash clear",
    "git stash pop",
    "git stash",
    "git stash push -m wip",
    "git rebase -i HEAD~5",
    "git rebase main",
    "git commit --amend -m again",
    "git commit -a --amend --no-edit",
    "git filter-branch --tree-filter 'rm x' HEAD",
    "git filter-repo --path src",
    "git update-ref -d refs/heads/x",
    "git update-ref refs/heads/main HEAD~1",
    "git symbolic-ref HEAD refs/heads/other",
    "git reflog expire --expire=now --all",
    "git reflog delete HEAD@{1}",
    "git gc --prune=now",
    "git gc",
    "git prune",
    "git repack -a -d",
    "git worktree remove ../wt",
    "git worktree prune",
    "git remote remove origin",
    "git fetch --prune",
    "git pull",
    "git merge --abort",
    "git update-index --assume-unchanged x",
    "git read-tree HEAD",
    "git rm --cached x",
    "git notes remove HEAD",
    # spelled or wrapped otherwise
    "git -C sub branch -D x",
    "git -c core.x=y stash drop",
    "/usr/bin/git reset --hard",
    "sudo git reset --hard",
    "env GIT_DIR=.git git log",
    "bash -c 'git branch -D x && git gc --prune=now'",
    "git status && git reset --hard",
    "echo $(git stash drop)",
    "eval 'git stash clear'",
    "bash <<EOF\ngit reset --hard\nEOF",
    # deletes that reach .git
    "rm -rf .",
    "rm -rf ./",
    "rm -rf ..",
    "rm -rf ../project",
    "rm -rf /home/me/project",
    "rm -rf ~/project",
    'rm -rf "$DIR"',
    "rm -rf .*",
    "find . -delete",
    "find . -name '*.pyc' -exec rm {} +",
    "mv .git /tmp/old-git",
    "echo x > .git/HEAD",
    "python3 -c \"import shutil; shutil.rmtree('.git')\"",
    # what cannot be read is doubted
    "git reset 'unclosed",
]

KEEPS = [
    "",
    "ls -la",
    "git status",
    "git log --oneline",
    "git diff HEAD~1",
    "git add -A",
    "git commit -m 'work'",
    "git checkout main",
    "git checkout -b feature",
    "git switch -c feature",
    "git switch main",
    "git branch",
    "git branch --list",
    "git branch new-feature",
    "git tag v2",
    "git tag -l",
    "git stash list",
    "git stash show -p",
    "git reflog",
    "git reflog show main",
    "git notes",
    "git notes show HEAD",
    "git remote -v",
    "git remote add origin https://example.com/x.git",
    "git fetch origin",
    "git merge feature",
    "git cherry-pick abc123",
    "git push --force origin main",
    "git worktree list",
    "cat .gitignore",
    "ls .github/workflows",
    "rm -rf build",
    "rm -rf node_modules dist",
    "rm -rf ./build",
    "rm -rf *",
    "rm file.txt",
    "find src -name '*.pyc' -delete",
    "make clean",
]


@pytest.mark.parametrize("command", DESTROYS)
def test_named(command: str) -> None:
    assert destroys_git_state(command), command


@pytest.mark.parametrize("command", KEEPS)
def test_not_named(command: str) -> None:
    assert destroys_git_state(command) == "", command


@pytest.mark.parametrize("command", ["git tag -d v1", "git update-ref -d refs/heads/x",
                                     "git reflog expire --expire=now --all", "git gc",
                                     "git commit --amend -m x", "git symbolic-ref HEAD x"])
def test_the_classifier_checkpoints_before_them(command: str) -> None:
    """What the classifier alone would let through: a checkpoint is taken before each,
    its reason naming the repository."""
    destructive, reason = classify(command)
    assert destructive and reason == destroys_git_state(command), (command, reason)
