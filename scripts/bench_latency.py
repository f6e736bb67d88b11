"""How long a whole `rewind` process takes, against a bare `python -c pass` of the same
interpreter in the same run (issue 21): start-up is the latency of every agent hook.

Every case is a fresh process (fork + exec + the interpreter's start-up + rewind's),
timed from spawn to exit. Repeats run round-robin, so load that comes and goes touches
every case alike; each case reports min and median, and both as a ratio to the baseline's
min and median. A repeat first appends a line to one file and waits for the file's
timestamps to settle (see store.stamp's racy-clean rule), then runs, in order:
`diff --stat` (one file changed), `checkpoint` (after that one-file change), `checkpoint`
(no change), `list`, `cat`, the hook cases, `--version`, `--help` and the baseline.

    scripts/bench_latency                 # 5,000 files, 12 repeats
    scripts/bench_latency --repeats 20 --out /tmp/latency.md

Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import benchlib as bl

PYTHON = sys.executable
REWIND = shutil.which("rewind", path=os.path.dirname(PYTHON)) or "rewind"
SETTLE = 0.25  # seconds after an edit, so its timestamps are not "racily clean"
DIFF = "`rewind diff --stat` (one file changed)"
CHANGED = "`rewind checkpoint` after a one-file change"
BASELINE = "baseline: `python -c pass`"


@dataclass
class Case:
    name: str
    target: float | None  # the bound on min and median, as a ratio to the baseline
    argv: list[str]
    stdin: bytes | None = None
    expect: Callable[[subprocess.CompletedProcess], str | None] | None = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=12, help="runs of each case (>= 10)")
    p.add_argument("--files", type=int, default=5_000, help="files in the project")
    p.add_argument("--out", type=Path, help="also write the report here")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (its path is shown)")
    return p.parse_args(argv)


def hook_payload(project: Path, command: str, n: int) -> bytes:
    """A Claude Code PreToolUse payload running `command` in `project`."""
    return json.dumps({
        "session_id": "bench", "transcript_path": "/dev/null", "cwd": str(project),
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": f"toolu_{n}",
    }).encode()


def cases(project: bl.Project, changed: Path) -> list[Case]:
    def says(text: str) -> Callable[[subprocess.CompletedProcess], str | None]:
        def check(proc: subprocess.CompletedProcess) -> str | None:
            out = proc.stdout.decode(errors="replace")
            return None if text in out else f"expected {text!r}, got {out[:200]!r}"
        return check

    from rewindfs.hooks.agents import hook_argv

    hook = hook_argv("claude-code", PYTHON)  # what `rewind hooks install` writes
    return [
        Case(DIFF, 4.0, [REWIND, "diff", "--stat"], expect=says("1 file changed")),
        Case(CHANGED, 6.0, [REWIND, "checkpoint"], expect=says("taken")),
        Case("`rewind checkpoint` with no change", 5.0, [REWIND, "checkpoint"],
             expect=says("no changes")),
        Case("hook, `rm -rf build` with no change", 5.0, hook,
             stdin=hook_payload(project.root, "rm -rf build", 1)),
        Case("hook, a harmless command (`ls -la`)", 2.0, hook,
             stdin=hook_payload(project.root, "ls -la", 0)),
        Case("`rewind list`", 4.0, [REWIND, "list"], expect=says("1.")),
        Case(f"`rewind cat 1 {changed}`", 4.0, [REWIND, "cat", "1", str(changed)],
             expect=says("edit")),
        Case("`rewind --version`", 1.5, [REWIND, "--version"], expect=says("version")),
        Case("`rewind --help`", 1.5, [REWIND, "--help"], expect=says("Usage:")),
        Case(BASELINE, None, [PYTHON, "-c", "pass"]),
    ]


def run_case(case: Case, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process: user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(case.argv, cwd=cwd, env=env, input=case.stdin,
                          stdin=None if case.stdin is not None else subprocess.DEVNULL,
                          capture_output=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    problem = f"exit {proc.returncode}: {proc.stderr.decode()[-300:]}" if proc.returncode \
        else case.expect(proc) if case.expect else None
    if problem:
        raise SystemExit(f"bench_latency: {case.name}: {problem}")
    return elapsed, cpu


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.repeats < 10:
        raise SystemExit("bench_latency: --repeats must be at least 10")
    rep = bl.Reporter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    try:
        return bench(args, tmp, rep)
    finally:
        from rewindfs.hooks import helper

        helper.stop(tmp / "home" / "rewind-hooks")  # the hook cases started it
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def child_env(tmp: Path, home: Path) -> dict[str, str]:
    """The environment of every case: no REWIND_* or GIT_* of the caller's, and bytecode
    cached (as for any installed package; a PYTHONDONTWRITEBYTECODE of the caller's would
    make each process compile rewindfs from source), in the temp dir."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("REWIND_", "GIT_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HERMES_HOME=str(home), HOME=str(tmp), LC_ALL="C.UTF-8",
               PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    return env


def wait_for_stamp(home: Path, since: float) -> None:
    """Until the stat stamp the last checkpoint leaves (written by a detached child) is
    there: the next command runs seconds later in real use."""
    stamps = home / "checkpoints" / "store" / "stamps"
    end = time.monotonic() + 5
    while time.monotonic() < end:
        if any(p.stat().st_mtime >= since for p in stamps.glob("*.json")):
            return
        time.sleep(0.01)


def bench(args: argparse.Namespace, tmp: Path, rep: bl.Reporter) -> int:
    home = tmp / "home"
    home.mkdir()
    env = child_env(tmp, home)
    rep.progress(f"generating {args.files:,} files")
    project = bl.generate_project(tmp / "proj", files=args.files,
                                  total_bytes=args.files * 4 * bl.KiB, node_modules_files=0,
                                  binary_bytes=0)
    rep.progress("first checkpoints")
    subprocess.run([REWIND, "checkpoint", "-m", "first"], cwd=project.root, env=env,
                   check=True, capture_output=True)
    changed = bl.touch_one_file(project, 0)
    time.sleep(SETTLE)
    subprocess.run([REWIND, "checkpoint", "-m", "second"], cwd=project.root, env=env,
                   check=True, capture_output=True)
    todo = cases(project, changed)
    samples: dict[str, list[float]] = {c.name: [] for c in todo}
    cpu: dict[str, list[float]] = {c.name: [] for c in todo}
    for i in range(args.repeats + 1):  # the first round warms caches (bytecode, pages)
        rep.progress(f"repeat {i}/{args.repeats}" if i else "warming up")
        for case in todo:
            if case.name == DIFF:
                with open(project.root / changed, "a") as fh:
                    fh.write(f"// edit {i} at {time.time_ns()}\n")
                time.sleep(SETTLE)
            started = time.time()
            elapsed, used = run_case(case, project.root, env)
            if case.name == CHANGED:
                wait_for_stamp(home, started)
            if i:
                samples[case.name].append(elapsed)
                cpu[case.name].append(used)
    print(render(args, project, todo, samples, cpu))
    return 0


def ratios(samples: dict[str, list[float]], name: str) -> tuple[float, float, float, float]:
    """(min, median, min / baseline's min, median / baseline's median)."""
    base, s = samples[BASELINE], samples[name]
    lo, med = min(s), statistics.median(s)
    return lo, med, lo / min(base), med / statistics.median(base)


def render(args: argparse.Namespace, project: bl.Project, todo: list[Case],
           samples: dict[str, list[float]], cpu: dict[str, list[float]]) -> str:
    rows = []
    for case in todo:
        lo, med, ratio_min, ratio_med = ratios(samples, case.name)
        _, _, cpu_min, cpu_med = ratios(cpu, case.name)
        met = "" if case.target is None else \
            ("met" if max(ratio_min, ratio_med) <= case.target else "MISSED")
        rows.append([case.name, f"{bl.fmt_seconds(lo)} / {bl.fmt_seconds(med)}",
                     f"{ratio_min:.2f}x / {ratio_med:.2f}x", f"{cpu_min:.2f}x / {cpu_med:.2f}x",
                     f"<= {case.target:g}x" if case.target else "", met])
    load = os.getloadavg()
    out = [
        f"# bench_latency: {project.describe()}, {args.repeats} repeats",
        "",
        "Wall time of whole processes (min / median) and its ratio to the baseline's "
        "(min / min, median / median); CPU time (user + system) as the same ratios, "
        "steadier on a loaded machine. Targets are on the wall-time ratios.",
        "",
        bl.markdown_table(["case", "wall min / median", "ratio", "CPU ratio", "target", ""],
                          rows),
        "",
        f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        "",
        bl.markdown_table(["machine", ""], bl.machine_info()),
    ]
    text = "\n".join(out) + "\n"
    if args.out:
        args.out.write_text(text)
    return text


if __name__ == "__main__":
    sys.exit(main())
