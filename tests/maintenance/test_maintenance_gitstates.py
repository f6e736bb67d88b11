"""The project repository's states are part of their checkpoints: `rewind delete`, the
max_snapshots prune and the size cap drop a checkpoint's state with it, and gc (Hermes's
own `git gc --prune=now` included) frees what only that state held; the keeper
(`refs/rewind/git/<h16>`) keeps exactly the states of the checkpoints still there."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import isolated_git_env
from gitrepos import git, rich_repository

from rewindfs.store import Layout, Store, project_hash
from rewindfs.store.history import gitkeep


def _store_has(store_dir: Path, oid: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=store_dir,
                          env=isolated_git_env(GIT_DIR=str(store_dir))).returncode == 0


def _states(home: Path, project: Path) -> set[str]:
    repo = Store(Layout.for_home(home)).repo
    return gitkeep.kept(repo, project_hash(project))


def _trailers(run_rewind, project: Path) -> list[str | None]:
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    return [cp["trailers"].get("Rewind-Git-State") for cp in listed]


def _secret_commit(project: Path) -> str:
    """A commit on a branch of its own, whose blob is in no other commit."""
    (project / "secret.txt").write_text("only on tmp\n" * 50)
    git(project, "stash", "-q", "--include-untracked")  # (keeps the staged work aside)
    git(project, "switch", "-q", "-c", "tmp")
    (project / "secret.txt").write_text("only on tmp\n" * 50)
    git(project, "add", "secret.txt")
    git(project, "commit", "-q", "-m", "on tmp")
    oid = git(project, "rev-parse", "HEAD").strip()
    git(project, "switch", "-q", "main")
    return oid


def test_delete_then_gc_frees_what_only_its_state_held(tmp_path, home, store_dir,
                                                        run_rewind) -> None:
    project = rich_repository(tmp_path)
    run_rewind("checkpoint", "-m", "a", cwd=project, check=True)
    secret = _secret_commit(project)
    run_rewind("checkpoint", "-m", "b", cwd=project, check=True)
    git(project, "branch", "-D", "tmp")
    (project / "c.txt").write_text("c\n")
    run_rewind("checkpoint", "-m", "c", cwd=project, check=True)
    named = _trailers(run_rewind, project)
    assert len(set(named)) == 3 and _states(home, project) == set(named)
    assert _store_has(store_dir, secret)

    run_rewind("delete", "2", "-f", cwd=project, check=True)
    left = set(_trailers(run_rewind, project))
    assert _states(home, project) == left and named[1] not in left
    # Hermes's own gc, as it runs it: what only the deleted checkpoint's state kept goes.
    subprocess.run(["git", "gc", "-q", "--prune=now"], cwd=store_dir, check=True,
                   env=isolated_git_env(GIT_DIR=str(store_dir)))
    assert not _store_has(store_dir, secret)
    # ... and the states still named are whole: restore 1 --git still works.
    git(project, "branch", "-D", "feature")
    run_rewind("restore", "1", "--git", "--yes", cwd=project, check=True)
    assert "feature" in git(project, "branch")


def test_max_snapshots_drops_the_states_with_their_checkpoints(tmp_path, home, run_rewind
                                                               ) -> None:
    project = rich_repository(tmp_path)
    env = {"REWIND_MAX_SNAPSHOTS": "2"}
    for i in range(4):
        git(project, "tag", f"t{i}")  # a new state each time
        (project / "n.txt").write_text(f"{i}\n")
        run_rewind("checkpoint", "-m", f"cp {i}", cwd=project, env=env, check=True)
    named = _trailers(run_rewind, project)
    assert len(named) == 2
    assert _states(home, project) == set(named)


def test_the_size_cap_counts_a_state_as_part_of_its_checkpoint(tmp_path, home, store_dir,
                                                               run_rewind) -> None:
    """A history that alone is over the cap: dropping the old checkpoint (and its state)
    brings the store under it, the newest checkpoint's state stays."""
    project = rich_repository(tmp_path)
    big = project / "big.bin"
    big.write_bytes(os.urandom(3 * 1024 * 1024))
    git(project, "add", "big.bin")
    git(project, "commit", "-q", "-m", "big")
    run_rewind("checkpoint", "-m", "with the big history", cwd=project, check=True)
    blob = git(project, "rev-parse", "HEAD:big.bin").strip()
    git(project, "reset", "-q", "--hard", "HEAD~1")
    git(project, "reflog", "expire", "--expire=now", "--all")
    git(project, "gc", "-q", "--prune=now")
    (project / "later.txt").write_text("later\n")
    run_rewind("checkpoint", "-m", "after the reset", cwd=project, check=True)
    assert _store_has(store_dir, blob)
    run_rewind("prune", "--max-size-mb", "2", "-f", cwd=project, check=True)
    named = _trailers(run_rewind, project)
    assert len(named) == 1 and _states(home, project) == set(named)
    assert not _store_has(store_dir, blob)
