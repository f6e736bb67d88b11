"""Benchmark: what recording the project's own `.git` costs a checkpoint, and what
`rewind restore N --git` costs a restore, on a long history (this project's own clone).

The project is a copy of a git repository (default: /work/main, this project's clone;
--repo another): its `.git` copied whole, its working tree checked out. Each case runs
the same checkpoint (or restore) with the repository's state and without it (the files
only: the baseline), in this process, alternating which goes first; the table gives
the minimum and the median of the repeats and the ratio of the medians.

Cases
  1 first checkpoint, fresh store: the history's first copy into the store
  2 a later checkpoint, nothing changed (the repository's state unchanged)
  3 a later checkpoint after one new commit (its objects alone copied)
  4 restore of checkpoint 1 after `rm -rf .git` (--git recreates it whole; the baseline
    is a plain restore, which leaves .git gone)
  5 restore of checkpoint 1 after `git branch -D` + a new commit (--git sets refs back)

This is a benchmark, not a test: it never fails on a number.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


CPU: dict[str, list[float]] = {}  # "case/way" -> CPU seconds per call (this process + git)


def cpu(key: str, fn: Callable[[], object]) -> Callable[[], object]:
    """`fn`, its CPU time (user + system, its git children included) noted under `key`:
    what a call costs whatever else the machine runs."""
    def run() -> object:
        before = _cpu_now()
        try:
            return fn()
        finally:
            CPU.setdefault(key, []).append(_cpu_now() - before)
    return run


def both(case: str, files: Callable[[], object], git: Callable[[], object]
         ) -> dict[str, Callable[[], object]]:
    """The case's two ways, each with its CPU time noted."""
    return {"files": cpu(case + "/files", files), "git": cpu(case + "/git", git)}


def _cpu_now() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), \
        resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def copy_project(source: Path, dest: Path) -> Path:
    """`source`'s .git copied whole, its HEAD checked out beside it."""
    dest.mkdir(parents=True)
    shutil.copytree(source / ".git", dest / ".git", symlinks=True)
    git(dest, "reset", "-q", "--hard")
    return dest


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=Path("/work/main"),
                   help="the repository whose history is copied (default: /work/main)")
    p.add_argument("--repeats", type=int, default=5, metavar="N")
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    p.add_argument("--tmp", type=Path, metavar="DIR", help="where to make the tmp dir")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir")
    p.add_argument("--quick", action="store_true", help="2 repeats")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.quick:
        args.repeats = 2
    if not (args.repo / ".git").is_dir():
        print(f"{args.repo} has no .git directory: give --repo", file=sys.stderr)
        return 2
    with bl.tmp_dir(args, "bench-gitstate-") as tmp:
        return bl.emit(*run(args, tmp), args)


def run(args, tmp: Path) -> tuple[list[str], list[str]]:
    from rewindfs import restore as rs
    from rewindfs.store import Layout, Store, take
    from rewindfs.store.projectgit import Recorder

    project = copy_project(args.repo, tmp / "proj")
    commits = git(project, "rev-list", "--all", "--count").strip()
    refs = len(git(project, "for-each-ref").splitlines())
    git_size = sum(f.stat().st_size for f in (project / ".git").rglob("*") if f.is_file())
    files = len(git(project, "ls-files").splitlines())
    counter = iter(range(10_000))
    notes: dict[str, str] = {}

    def fresh() -> Store:
        return Store(Layout(tmp / f"base-{next(counter)}"))

    def checkpoint(store: Store, with_git: bool, key: str) -> object:
        recorder = Recorder() if with_git else None
        result = take(store, project, "bench", recorder=recorder, allow_empty=True)
        if recorder is not None and key:
            notes[key] = recorder.note() or ""
        return result

    rows, problems = [], []

    # 1: the first checkpoint of the project in a fresh store
    stores: dict[str, Store] = {}

    def setup_first(_: int) -> None:
        stores["git"], stores["files"] = fresh(), fresh()

    case = "1 first checkpoint (history's first copy)"
    timing = bl.measure(both(case, lambda: checkpoint(stores["files"], False, ""),
                                     lambda: checkpoint(stores["git"], True, "first")),
                        args.repeats, setup=setup_first)
    rows.append(_row(case, timing, notes.get("first")))

    # 2 and 3: later checkpoints, in one store per way that already has the first
    later = {"git": fresh(), "files": fresh()}
    checkpoint(later["git"], True, "")
    checkpoint(later["files"], False, "")
    case = "2 later checkpoint, nothing changed"
    timing = bl.measure(both(case, lambda: checkpoint(later["files"], False, ""),
                                     lambda: checkpoint(later["git"], True, "unchanged")),
                        args.repeats)
    rows.append(_row(case, timing, notes.get("unchanged")))

    def one_commit(i: int) -> None:
        (project / "BENCH_NOTE.txt").write_text(f"bench {i}\n")
        git(project, "add", "BENCH_NOTE.txt")
        git(project, "commit", "-q", "-m", f"bench {i}")

    case = "3 later checkpoint after one new commit"
    timing = bl.measure(both(case, lambda: checkpoint(later["files"], False, ""),
                                     lambda: checkpoint(later["git"], True, "commit")),
                        args.repeats, setup=one_commit)
    rows.append(_row(case, timing, notes.get("commit")))

    # 4 and 5: restores of the first checkpoint of the `later` git store
    store = later["git"]
    target = _oldest(store, project)

    def drop_git(_: int) -> None:
        shutil.rmtree(project / ".git", ignore_errors=True)

    def restore(with_git: bool) -> object:
        return rs.restore(store, project, target, rs.Options(git=with_git))

    case = "4 restore after rm -rf .git (recreated whole)"
    timing = bl.measure(both(case, lambda: restore(False),
                                     lambda: restore(True)),
                        args.repeats, setup=drop_git, alternate=False)
    if not (project / ".git").is_dir():
        problems.append("restore --git left no .git")
    rows.append(_row(case, timing, None))

    def lose_branch(i: int) -> None:
        if not (project / ".git").is_dir():
            restore(True)
        git(project, "branch", "-f", f"bench-{i}", "HEAD")
        git(project, "branch", "-D", f"bench-{i}")
        one_commit(1000 + i)

    case = "5 restore after branch -D + a commit (refs set back)"
    timing = bl.measure(both(case, lambda: restore(False),
                                     lambda: restore(True)),
                        args.repeats, setup=lose_branch, alternate=False)
    rows.append(_row(case, timing, None))

    out = [f"# bench_gitstate: {args.repo} ({commits} commits, {refs} refs, "
           f"{git_size / 2**20:.1f} MiB in .git, {files} files tracked)", ""]
    out += [f"- {k}: {v}" for k, v in bl.machine_info()]
    out += ["", bl.markdown_table(
        ["case", "files only: wall median", "with .git: wall min / median", "ratio",
         "CPU median: files only / with .git", "closing note"], rows)]
    out.append(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return out, problems


def _oldest(store, project: Path):
    from rewindfs import store as st

    history = st.checkpoints(store.repo, st.project_hash(project))
    return history[-1]


def _row(case: str, timing: dict, note: str | None) -> list[str]:
    base, ours = timing["files"], timing["git"]
    ratio = ours.median / base.median if base.median else float("nan")
    cpu_files = statistics.median(CPU.get(case + "/files", [float("nan")]))
    cpu_git = statistics.median(CPU.get(case + "/git", [float("nan")]))
    return [case, bl.fmt_seconds(base.median),
            f"{bl.fmt_seconds(min(ours.samples))} / {bl.fmt_seconds(ours.median)}",
            f"{ratio:.1f}x", f"{bl.fmt_seconds(cpu_files)} / {bl.fmt_seconds(cpu_git)}",
            note or ""]


if __name__ == "__main__":
    sys.exit(main())
