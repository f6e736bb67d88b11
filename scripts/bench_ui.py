"""How long `rewind ui` takes to show its first screen on a project with 2,000 checkpoints
(issue 36: <= 300 ms), against a bare `python -c pass` of the same interpreter in the
same run, and `rewind list` for scale.

The project: 1,000 files and 2,000 checkpoints (the first and the last taken by `rewind
checkpoint`, the 1,998 between written by `git fast-import`, bench_latency's
grow_history). Each run is a fresh process on its own pseudo-terminal (80x24), timed from
spawn to the moment the terminal has received the first screen's newest row (its reason
and the timeline's title: what a person sees first); `q` then ends it. Runs go round
robin with the baselines; each case reports min and median, and both as a ratio to the
baseline's. The first round warms caches and is not counted.

    scripts/bench_ui                       # 20 repeats
    scripts/bench_ui --repeats 10 --out /tmp/ui.md

Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import benchlib as bl
from bench_latency import child_env, grow_history

PYTHON = sys.executable
REWIND = shutil.which("rewind", path=os.path.dirname(PYTHON)) or "rewind"
ANSI = re.compile(rb"\x1b\[[0-9;?<>=$]*[A-Za-z~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r")
FIRST_SCREEN = [b"newest first", b"last one"]  # the timeline's title, the newest reason
DEADLINE = 60.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=20, help="runs of each case (>= 5)")
    p.add_argument("--files", type=int, default=1_000, help="files in the project")
    p.add_argument("--checkpoints", type=int, default=2_000,
                   help="checkpoints in its history")
    p.add_argument("--out", type=Path, help="also write the report here")
    return p.parse_args(argv)


def first_screen(argv: list[str], cwd: Path, env: dict[str, str], wanted: list[bytes] | None
                 ) -> float:
    """Seconds from spawn until every one of `wanted` has reached the terminal (None: until
    the process exits); then `q`, and the process waited for."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    seen, elapsed = b"", None
    end = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < end:
            if wanted is None and proc.poll() is not None:
                elapsed = time.perf_counter() - t0
                break
            if select.select([master], [], [], 0.05)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                seen += chunk
                if wanted is not None and all(w in ANSI.sub(b"", seen) for w in wanted):
                    elapsed = time.perf_counter() - t0
                    break
        if elapsed is None:
            raise SystemExit(f"bench_ui: {argv[-1]} never showed {wanted}: "
                             f"{ANSI.sub(b'', seen)[-300:]!r}")
        if wanted is not None:
            os.write(master, b"q")
        while proc.poll() is None and time.monotonic() < end:
            if select.select([master], [], [], 0.05)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            raise SystemExit("bench_ui: `rewind ui` did not end on q")
    finally:
        os.close(master)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.repeats < 5:
        raise SystemExit("bench_ui: --repeats must be at least 5")
    rep = bl.Reporter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    try:
        home = tmp / "home"
        home.mkdir()
        env = {**child_env(tmp, home), "TERM": "xterm-256color"}
        rep.progress(f"generating {args.files:,} files")
        project = bl.generate_project(tmp / "proj", files=args.files,
                                      total_bytes=args.files * 4 * bl.KiB,
                                      node_modules_files=0, binary_bytes=0)
        rep.progress(f"first checkpoint, then {args.checkpoints - 2:,} more, then the last")
        subprocess.run([REWIND, "checkpoint", "-m", "first"], cwd=project.root, env=env,
                       check=True, capture_output=True)
        grow_history(home, project, args.checkpoints - 2)
        bl.touch_one_file(project, 0)
        subprocess.run([REWIND, "checkpoint", "-m", "last one"], cwd=project.root, env=env,
                       check=True, capture_output=True)
        cases = {
            "`rewind ui`: first screen": ([REWIND, "ui"], FIRST_SCREEN),
            "`rewind list` (to its end)": ([REWIND, "list", "--no-pager"], None),
            "baseline: `python -c pass`": ([PYTHON, "-c", "pass"], None),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        loads = []
        for i in range(args.repeats + 1):
            rep.progress(f"repeat {i}/{args.repeats}" if i else "warming up")
            for name, (case, wanted) in cases.items():
                took = first_screen(case, project.root, env, wanted)
                if i:
                    samples[name].append(took)
            loads.append(os.getloadavg()[0])
        print(render(args, samples, loads))
        if args.out:
            args.out.write_text(render(args, samples, loads) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def render(args: argparse.Namespace, samples: dict[str, list[float]], loads: list[float]
           ) -> str:
    base = samples["baseline: `python -c pass`"]
    rows = []
    for name, s in samples.items():
        lo, med = min(s), statistics.median(s)
        rows.append([name, f"{lo * 1000:.0f} ms", f"{med * 1000:.0f} ms",
                     f"{lo / min(base):.1f}x", f"{med / statistics.median(base):.1f}x"])
    info = "; ".join(f"{k}: {v}" for k, v in bl.machine_info())
    return "\n".join([
        f"# rewind ui start-up: {args.checkpoints:,} checkpoints, {args.files:,} files, "
        f"{args.repeats} repeats, 80x24",
        "",
        bl.markdown_table(["case", "min", "median", "min / baseline", "median / baseline"],
                          rows),
        "",
        f"load average (1 min) during the runs: min {min(loads):.2f}, "
        f"median {statistics.median(loads):.2f}, max {max(loads):.2f}",
        f"machine: {info}",
    ])


if __name__ == "__main__":
    sys.exit(main())
