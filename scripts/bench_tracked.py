"""Benchmark: what capturing the files git tracks costs (issue 47), on a git repository of
100,000 files (--quick: 20,000) of which 100 are tracked below an excluded `build/`.

Every case against a baseline in the same run: the same project with its `.git` moved
away (no tracked-file check at all). Cases
  1 no-change checkpoint, git's index unchanged since the last one (the remembered list
    looked at: an lstat per tracked file the excludes match)
  2 no-change checkpoint right after git rewrote its index (read by libgit2, compared with
    the capture's own: the cost of `git add`, `git commit`, `git checkout` once)
  3 that read and compare alone (store.capture.tracked), git's index changed each time
Reported: min and median of the repeats, and the ratio of medians to the baseline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402


def git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_AUTHOR_NAME="b",
               GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    subprocess.run(["git", "-C", str(root), *args], env=env, check=True,
                   capture_output=True)


def rewrite_index(root: Path) -> None:
    """git's index written again, as git writes it (a new file renamed over the old)."""
    index = root / ".git" / "index"
    data = index.read_bytes()
    tmp = index.with_name("index.bench")
    tmp.write_bytes(data)
    os.replace(tmp, index)


def main(argv: list[str] | None = None) -> int:
    args = bl.parse_args(argv, __doc__, "20,000 files instead of 100,000", repeats=7)
    files = 20_000 if args.quick else 100_000
    from rewindfs.store import Layout, Limits, Store, take
    from rewindfs.store.capture.tracked import Tracked
    from rewindfs.store.capture.walk import Walk
    from rewindfs.store.history import locked

    out, problems = [f"# Capturing the files git tracks: {files:,} files", ""], []
    with bl.tmp_dir(args, "bench-tracked-") as tmp:
        root = tmp / "proj"
        root.mkdir()
        bl.generate_many_small(root, files=files - 100)
        for i in range(100):
            (root / "build" / f"tracked{i}.py").parent.mkdir(exist_ok=True)
            (root / "build" / f"tracked{i}.py").write_text(f"x = {i}\n")
        plain = tmp / "plain"   # the baseline: the same files, no repository around them
        subprocess.run(["cp", "-a", str(root), str(plain)], check=True)
        git(root, "init", "-q")
        git(root, "add", "-A")
        limits = Limits(max_files=files * 2)
        store = Store(Layout(tmp / "home" / "checkpoints"))
        base_store = Store(Layout(tmp / "home-plain" / "checkpoints"))
        if not take(store, root, "first", limits=limits).taken:
            problems.append("the first checkpoint was not taken")
        take(base_store, plain, "first", limits=limits)

        def baseline():
            return take(base_store, plain, "no change", limits=limits)

        def unchanged():
            return take(store, root, "no change", limits=limits)

        timed = bl.measure({"baseline": baseline, "git index unchanged": unchanged},
                           args.repeats)
        after = bl.measure({"baseline": baseline, "git index rewritten": unchanged},
                           args.repeats, setup=lambda _i: rewrite_index(root))

        def read_alone():
            """The tracked-file step alone (its own timer: the lock, the project's handle
            and the capture's own index are loaded first, untimed)."""
            with locked(store, root) as project:
                index = project.repo.index
                index.read(False)
                walk = Walk(project, index, limits)
                tracked = Tracked(project, walk, [])
                t0 = time.perf_counter()
                tracked.add_to_walk(None)
                return time.perf_counter() - t0, len(tracked.paths)

        alone = bl.measure({"read and compare": read_alone}, args.repeats,
                           setup=lambda _i: rewrite_index(root))["read and compare"]
        alone.samples = [seconds for seconds, _found in alone.results]
        found = alone.results[0][1]
        if found != 100:
            problems.append(f"{found} tracked files under build/ found, not 100")
        rows = []
        base = timed["baseline"].median
        for name, timing in (("no-change checkpoint, no repository (baseline)",
                              timed["baseline"]),
                             ("no-change checkpoint, git's index unchanged",
                              timed["git index unchanged"]),
                             ("no-change checkpoint after git rewrote its index",
                              after["git index rewritten"]),
                             ("git's index read and compared alone", alone)):
            ratio = "" if timing is timed["baseline"] else f"{timing.median / base:.2f}x"
            rows.append([name, bl.fmt_seconds(min(timing.samples)),
                         bl.fmt_seconds(timing.median), ratio])
        out.append(bl.markdown_table(["case", "min", "median", "vs baseline"], rows))
        out.append("")
        out.append(f"{args.repeats} repeats; git's index: "
                   f"{(root / '.git' / 'index').stat().st_size / 2**20:.1f} MiB")
        out.append("")
        out.extend(f"- {k}: {v}" for k, v in bl.machine_info())
    return bl.emit(out, problems, args)


if __name__ == "__main__":
    sys.exit(main())
