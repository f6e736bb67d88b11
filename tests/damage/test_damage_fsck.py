"""The store stays `git fsck`-clean after a Hermes-style `git gc` and a rewindfs prune
(issue 10): git's gc writes a commit-graph, and once rewindfs prunes the commits it
names, `git fsck` would fail for good (a commit-graph is only a cache; rewindfs's gc
removes it, `rewind check --repair` too)."""

from __future__ import annotations


def _hermes_style_gc(store_git) -> None:
    store_git("gc", "--prune=now", "-q")


def _checkpoints(run_rewind, project, count: int, start: int = 0, **env: str) -> None:
    for i in range(start, start + count):
        (project / f"f{i}.txt").write_text(f"{i}\n")
        run_rewind("checkpoint", project, "-m", f"c{i}", check=True, env=env or None)


def test_prune_after_a_hermes_gc_keeps_the_store_fsck_clean(project, run_rewind, store_git,
                                                             store_dir, fsck):
    _checkpoints(run_rewind, project, 6)
    _hermes_style_gc(store_git)
    assert (store_dir / "objects" / "info" / "commit-graph").exists()  # git wrote one
    fsck()
    _checkpoints(run_rewind, project, 1, start=6, REWIND_MAX_SNAPSHOTS="2")
    run_rewind("prune", "-f", check=True)
    fsck()  # without the fix: "Could not read <commit> ... for commit-graph", forever
    assert run_rewind("check", check=True).returncode == 0


def test_check_repairs_a_stale_commit_graph(project, run_rewind, store_git, store_dir, fsck):
    _checkpoints(run_rewind, project, 6)
    _hermes_style_gc(store_git)
    graph = (store_dir / "objects" / "info" / "commit-graph").read_bytes()
    _checkpoints(run_rewind, project, 1, start=6, REWIND_MAX_SNAPSHOTS="2")
    run_rewind("prune", "-f", check=True)
    # Put the stale graph back, as a gc killed half way or an older rewindfs leaves it.
    (store_dir / "objects" / "info" / "commit-graph").write_bytes(graph)
    assert store_git("fsck", check=False).returncode != 0
    report = run_rewind("check")
    assert report.returncode == 0  # a stale cache is not damage...
    assert "commit-graph" in report.stdout and "--repair" in report.stdout  # ...but reported
    repaired = run_rewind("check", "--repair", check=True)
    assert "repaired (1)" in repaired.stdout
    fsck()
