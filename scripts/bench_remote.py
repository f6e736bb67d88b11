"""Benchmark: pushing and fetching checkpoints through a git remote, against plain git.

A generated 5,000-file project is checkpointed into a store ("machine A"); the
remotes are bare repositories on file://. Each case times rewindfs (store.remote,
in process, as `rewind push`/`fetch` and the automatic push run it) and plain git
moving the same objects, in the same run, alternating who goes first:

  first push of the 5,000-file checkpoint to an empty remote   target: <= 1.5x git push
  push of one new one-file checkpoint                          target: <= 1.5x git push
  fetch of one new one-file checkpoint (on "machine B")        target: <= 1.5x git fetch

git's side: `git push <remote> <checkpoint>:refs/bench/x` from the same store, and
`git fetch <remote> +refs/rewind/m/*:refs/bench/*` into a bare repository that holds
what machine B holds. The `rewind push` command line, Python start included, is timed
too (for information: no target).

A benchmark, not a test: missed targets are reported, never asserted.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args: str, git_dir: Path) -> None:
    subprocess.run(["git", *args], env={**GIT_ENV, "GIT_DIR": str(git_dir)}, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    args = bl.parse_args(argv, __doc__, "1,000 files instead of 5,000", 7)
    logging.disable(logging.CRITICAL)
    import rewindfs
    from rewindfs.store import Layout, Store, project_hash
    from rewindfs.store.remote import fetch, push, remotes

    report = bl.Reporter()
    with bl.tmp_dir(args, "bench-remote-") as tmp:
        files = 1000 if args.quick else 5000
        report.progress(f"generating project ({files} files) in {tmp}")
        project = bl.generate_project(tmp / "project", files=files,
                                      total_bytes=50 * bl.MiB * files // 5000,
                                      node_modules_files=0, binary_bytes=0, seed=args.seed)
        a_layout, b_layout = Layout(tmp / "a" / "checkpoints"), Layout(tmp / "b" / "checkpoints")
        manager = rewindfs.CheckpointManager(enabled=True, max_snapshots=1000,
                                             base=a_layout.base)
        a, b = Store(a_layout), Store(b_layout)
        workdir = project.root
        h16 = project_hash(workdir)
        manager.take(str(workdir), "first")
        first = bl.store_tip(a_layout.base, workdir).commit
        served = tmp / "served"

        def bare(name: str) -> Path:
            path = served / name
            subprocess.run(["git", "init", "-q", "--bare", str(path)], env=GIT_ENV, check=True)
            return path

        rows, problems = [], []

        def row(case: str, timings: dict, goal: float | None) -> None:
            g, r = timings["git"], timings["rewindfs"]
            text, ratio = bl.ratio_cell(r.median, g.median)  # rewindfs / git
            min_text, _ = bl.ratio_cell(min(r.samples), min(g.samples))
            met = "-" if goal is None else ("yes" if ratio is not None and ratio <= goal
                                            else "**NO**")
            rows.append([case, f"{bl.fmt_seconds(min(g.samples))} / {bl.fmt_seconds(g.median)}",
                         f"{bl.fmt_seconds(min(r.samples))} / {bl.fmt_seconds(r.median)}",
                         f"{text} ({min_text})", "-" if goal is None else f"<= {goal}x", met])
            problems.extend(f"{case}: {tool} failed" for tool, t in timings.items()
                            if not all(t.results))

        # 1. First push of the whole checkpoint to an empty remote.
        report.progress("timing: first push")
        fresh: dict[str, Path] = {}

        def new_remotes(i: int) -> None:
            fresh["rewind"] = bare(f"first-rewind-{i}.git")
            fresh["git"] = bare(f"first-git-{i}.git")
            remotes.add(a, f"first{i}", str(fresh["rewind"]))
            fresh["name"] = f"first{i}"  # type: ignore[assignment]

        def first_ours() -> bool:
            return push(a, str(fresh["name"]), [h16]).checkpoints == 1

        def first_git() -> bool:
            git("push", "--quiet", str(fresh["git"]), f"{first}:refs/bench/x",
                git_dir=a_layout.store)
            return True

        row(f"first push, {files:,} files", bl.measure(
            {"git": first_git, "rewindfs": first_ours}, args.repeats, setup=new_remotes), 1.5)

        # 2. and 3. One new one-file checkpoint: pushed, then fetched by machine B.
        origin, plain, plain_b = bare("origin.git"), bare("plain.git"), bare("plain-b.git")
        remotes.add(a, "origin", str(origin))
        push(a, "origin", [h16])
        git("push", "--quiet", str(plain), f"{first}:refs/bench/x", git_dir=a_layout.store)
        remotes.add(b, "origin", f"file://{origin}")
        fetch(b, "origin")
        refspec = "+refs/rewind/m/*:refs/bench/*"
        git("fetch", "--quiet", f"file://{origin}", refspec, git_dir=plain_b)
        tip: dict[str, str] = {}

        def one_more(i: int) -> None:
            bl.touch_one_file(project, i)
            manager.take(str(workdir), f"change {i}")
            tip["commit"] = bl.store_tip(a_layout.base, workdir).commit

        def push_ours() -> bool:
            return push(a, "origin", [h16]).checkpoints == 1

        def push_git() -> bool:
            git("push", "--quiet", str(plain), f"{tip['commit']}:refs/bench/x",
                git_dir=a_layout.store)
            return True

        report.progress("timing: push of one new checkpoint")
        row("push, one new one-file checkpoint", bl.measure(
            {"git": push_git, "rewindfs": push_ours}, args.repeats, setup=one_more), 1.5)

        def one_more_pushed(i: int) -> None:
            one_more(args.repeats + i)
            push(a, "origin", [h16])

        def fetch_ours() -> bool:
            return len(fetch(b, "origin").updated) == 1

        def fetch_git() -> bool:
            git("fetch", "--quiet", f"file://{origin}", refspec, git_dir=plain_b)
            return True

        report.progress("timing: fetch of one new checkpoint")
        row("fetch, one new one-file checkpoint", bl.measure(
            {"git": fetch_git, "rewindfs": fetch_ours}, args.repeats, setup=one_more_pushed), 1.5)

        rewind = shutil.which("rewind", path=os.path.dirname(sys.executable))
        env = {**os.environ, "HERMES_HOME": str(a_layout.base.parent)}

        def push_cli() -> bool:
            return subprocess.run([rewind, "push", "origin", "-C", str(workdir)], env=env,
                                  capture_output=True).returncode == 0

        report.progress("timing: rewind push (command line)")
        row("`rewind push` command, one new checkpoint", bl.measure(
            {"git": push_git, "rewindfs": push_cli}, args.repeats,
            setup=lambda i: one_more(3 * args.repeats + i)), None)

        out = ["## bench_remote", "", bl.markdown_table(["item", "value"], bl.machine_info()),
               "", f"project: {project.describe()}; remotes on file://; "
               f"{args.repeats} repeats; times min / median; ratio rewindfs/git of the "
               "medians (of the minimums)", "",
               bl.markdown_table(["case", "git", "rewindfs", "ratio", "target", "met?"], rows)]
        return bl.emit(out, problems, args)



if __name__ == "__main__":
    sys.exit(main())
