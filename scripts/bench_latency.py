"""How long a whole `rewind` process takes, for every verb a person meets, against a bare
`python -c pass` of the same interpreter in the same run (issues 21, 32 and 42): start-up
is the latency of every command and of every agent hook.

The project: 5,000 files and 2,000 checkpoints (the first and the last taken by `rewind
checkpoint`, the 1,998 between written by `git fast-import`, each appending a line to
one file, as a long agent session leaves them). Every case is a fresh process (fork +
exec + the interpreter's start-up + rewind's), timed from spawn to exit. Each verb runs
twice: served by the resident process (warm: up and watching the project) and in its own
process (REWIND_NO_SERVER=1: what every command cost before issue 42, and what one costs
while no resident process is up). Repeats run round-robin, so load that comes and goes
touches every case alike; each case reports min and median, and both as a ratio to the
baseline's min and median. A repeat first appends a line to one file and waits for the
file's timestamps to settle (see store.stamp's racy-clean rule), then runs the cases in
the table's order: the read verbs, the hooks (a harmless command; a destructive one with
no change; one after a one-file change), `checkpoint`, `--version`, `--help`, the
baseline. Last, once per repeat: the first command after the resident process is gone
(it runs in its own process and starts a new one).

    scripts/bench_latency                 # 5,000 files, 2,000 checkpoints, 20 repeats
    scripts/bench_latency --repeats 10 --out /tmp/latency.md

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
HOOK_CHANGED = "hook, `rm -rf build` after a one-file change"
BASELINE = "baseline: `python -c pass`"
SHELL_BASELINE = "baseline: `bash -c 'python -c pass'`"
CHECKPOINTS = 2_000
GONE = "the first `rewind list` after the resident process is gone"


@dataclass
class Case:
    name: str
    target: float | None  # the bound: a ratio to the baseline (ratio=True) or ms
    argv: list[str]
    stdin: bytes | None = None
    expect: Callable[[subprocess.CompletedProcess], str | None] | None = None
    ratio: bool = False
    edit: bool = False  # a file is changed (and left to settle) before each run
    baseline: str = BASELINE  # what a ratio is taken against
    served: bool = False  # handed to the resident process (else REWIND_NO_SERVER=1)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=20, help="runs of each case (>= 10)")
    p.add_argument("--files", type=int, default=5_000, help="files in the project")
    p.add_argument("--checkpoints", type=int, default=CHECKPOINTS,
                   help="checkpoints in its history")
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


def cases(project: bl.Project, changed: Path, word: str, count: int = CHECKPOINTS
          ) -> list[Case]:
    def says(text: str) -> Callable[[subprocess.CompletedProcess], str | None]:
        def check(proc: subprocess.CompletedProcess) -> str | None:
            out = proc.stdout.decode(errors="replace")
            return None if text in out else f"expected {text!r}, got {out[:200]!r}"
        return check

    from rewindfs.hooks.agents import hook_command

    # As an agent runs its hook: the command `rewind hooks install` writes, through a shell.
    hook = ["bash", "-c", hook_command("claude-code", PYTHON)]
    verbs = [
        ("`rewind list`", ["list"], says(f"{count}.")),
        ("`rewind show 1`", ["show", "1"], says("checkpoint 1")),
        (f"`rewind cat 1 {changed}`", ["cat", "1", str(changed)], says("edit")),
        ("`rewind diff 3 1 --stat`", ["diff", "3", "1", "--stat"], says("changed")),
        (f"`rewind log {changed}`", ["log", str(changed)], says("1.")),
        ("`rewind status`", ["status"], says("checkpoints")),
        (f"`rewind grep {word} 1`", ["grep", word, "1"], says(word)),
        ("`rewind restore --dry-run 3`", ["restore", "--dry-run", "3"],
         says("nothing was changed")),
    ]
    out = []
    for served in (True, False):
        tag = "" if served else " (own process)"
        out += [Case(name + tag, 5.0 if served else None, [REWIND, *args], expect=check,
                     ratio=True, served=served) for name, args, check in verbs]
        out += [Case(DIFF + tag, 5.0 if served else None, [REWIND, "diff", "--stat"],
                     expect=says("1 file changed"), edit=True, ratio=True, served=served),
                Case(CHANGED + tag, 6.0 if served else None, [REWIND, "checkpoint"],
                     expect=says("taken"), edit=True, ratio=True, served=served),
                Case("`rewind checkpoint` with no change" + tag, 5.0 if served else None,
                     [REWIND, "checkpoint"], expect=says("no changes"), ratio=True,
                     served=served)]
    return out + [
        Case("hook, a harmless command (`ls -la`)", 2.0, hook, ratio=True,
             stdin=hook_payload(project.root, "ls -la", 0), baseline=SHELL_BASELINE),
        Case("hook, `rm -rf build` with no change", 5.0, hook, ratio=True,
             stdin=hook_payload(project.root, "rm -rf build", 1), baseline=SHELL_BASELINE),
        Case(HOOK_CHANGED, 6.0, hook, stdin=hook_payload(project.root, "rm -rf build", 2),
             edit=True, ratio=True, baseline=SHELL_BASELINE),
        Case("`rewind --version`", 1.5, [REWIND, "--version"], expect=says("version"),
             ratio=True),
        Case("`rewind --help`", 1.5, [REWIND, "--help"], expect=says("Usage:"), ratio=True),
        Case(GONE, None, [REWIND, "list"], expect=says(f"{count}."), ratio=True, served=True),
        Case(BASELINE, None, [PYTHON, "-c", "pass"]),
        Case(SHELL_BASELINE, None, ["bash", "-c", f"{PYTHON} -c pass"]),
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
    """The environment of every case: no REWIND_* or GIT_* of the caller's (but a cap on
    checkpoints that keeps the long history whole), and bytecode
    cached (as for any installed package; a PYTHONDONTWRITEBYTECODE of the caller's would
    make each process compile rewindfs from source), in the temp dir."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("REWIND_", "GIT_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HERMES_HOME=str(home), HOME=str(tmp), LC_ALL="C.UTF-8",
               PYTHONPYCACHEPREFIX=str(tmp / "pycache"),
               # every checkpoint of the long history kept (the default keeps 20)
               REWIND_MAX_SNAPSHOTS=str(2 * CHECKPOINTS))
    return env


def stop_resident(home: Path) -> None:
    from rewindfs.hooks import helper

    pid = helper.running(home / "rewind-hooks")
    helper.stop(home / "rewind-hooks")
    end = time.monotonic() + 10
    while pid is not None and os.path.exists(f"/proc/{pid}") and time.monotonic() < end:
        time.sleep(0.01)


def wait_resident(home: Path, env: dict[str, str], cwd: Path) -> None:
    """Until a resident process answers (and watches the project: one served command)."""
    from rewindfs.resident.source import ask

    os.environ["HERMES_HOME"] = str(home)
    end = time.monotonic() + 60
    while ask({"kind": "status"}) is None and time.monotonic() < end:
        time.sleep(0.02)
    subprocess.run([REWIND, "diff", "--stat"], cwd=cwd, env=env, capture_output=True)


def wait_for_stamp(home: Path, since: float) -> None:
    """Until the stat stamp the last checkpoint leaves (written by a detached child) is
    there: the next command runs seconds later in real use."""
    stamps = home / "checkpoints" / "store" / "stamps"
    end = time.monotonic() + 5
    while time.monotonic() < end:
        if any(p.stat().st_mtime >= since for p in stamps.glob("*.json")):
            return
        time.sleep(0.01)


def grow_history(home: Path, project: bl.Project, count: int) -> None:
    """`count` checkpoints on top of the project's newest, each appending a line to one
    file (git fast-import: git itself is the right tool for writing a bench's history in
    seconds), the working tree left as the newest of them."""
    from rewindfs.store import Layout, project_hash

    store = Layout.for_home(home).store
    ref = Layout.project_ref(project_hash(project.root))
    env = {**os.environ, "GIT_DIR": str(store)}
    tip = subprocess.run(["git", "rev-parse", ref], env=env, check=True, capture_output=True,
                         text=True).stdout.strip()
    start = int(time.time()) - 60 * count
    parts = []
    for n in range(count):
        rel = project.files[(n * 31) % len(project.files)]
        path = project.root / rel
        data = path.read_bytes() + f"// checkpoint {n}\n".encode()
        path.write_bytes(data)
        when = f"rewindfs <rewindfs@local> {start + 60 * n} +0000"
        reason = "before patch" if n % 3 else f"before terminal: make step-{n}"
        msg = (f"{reason}\n\nRewind-Stats: files=1 insertions=1 deletions=0\n"
               f"Rewind-Time: {start + 60 * n}.000000\n").encode()
        parts += [f"commit {ref}\nauthor {when}\ncommitter {when}\ndata {len(msg)}\n".encode(),
                  msg, f"\nfrom {tip}\n".encode() if n == 0 else b"",
                  f"M 100644 inline {rel}\ndata {len(data)}\n".encode(), data, b"\n\n"]
    subprocess.run(["git", "fast-import", "--quiet", "--force"], input=b"".join(parts),
                   env=env, check=True)


def bench(args: argparse.Namespace, tmp: Path, rep: bl.Reporter) -> int:
    home = tmp / "home"
    home.mkdir()
    env = child_env(tmp, home)
    rep.progress(f"generating {args.files:,} files")
    project = bl.generate_project(tmp / "proj", files=args.files,
                                  total_bytes=args.files * 4 * bl.KiB, node_modules_files=0,
                                  binary_bytes=0)
    rep.progress(f"first checkpoint, then {args.checkpoints - 2:,} more, then the last")
    subprocess.run([REWIND, "checkpoint", "-m", "first"], cwd=project.root, env=env,
                   check=True, capture_output=True)
    grow_history(home, project, args.checkpoints - 2)
    changed = bl.touch_one_file(project, 0)
    time.sleep(SETTLE)
    subprocess.run([REWIND, "checkpoint", "-m", "second"], cwd=project.root, env=env,
                   check=True, capture_output=True)
    wait_resident(home, env, project.root)
    todo = cases(project, changed, "edit", args.checkpoints)
    samples: dict[str, list[float]] = {c.name: [] for c in todo}
    cpu: dict[str, list[float]] = {c.name: [] for c in todo}
    for i in range(args.repeats + 1):  # the first round warms caches (bytecode, pages)
        rep.progress(f"repeat {i}/{args.repeats}" if i else "warming up")
        for case in todo:
            if case.edit:
                with open(project.root / changed, "a") as fh:
                    fh.write(f"// edit {i} at {time.time_ns()}\n")
                time.sleep(SETTLE)
            started = time.time()
            if case.name == GONE:
                stop_resident(home)
            elapsed, used = run_case(case, project.root,
                                     env if case.served else {**env, "REWIND_NO_SERVER": "1"})
            if case.name == GONE:
                wait_resident(home, env, project.root)
            if case.name == CHANGED + " (own process)":   # (the watch needs no stamp)
                wait_for_stamp(home, started)
            if i:
                samples[case.name].append(elapsed)
                cpu[case.name].append(used)
    print(render(args, project, todo, samples, cpu))
    return 0


def ratios(samples: dict[str, list[float]], name: str, baseline: str = BASELINE
           ) -> tuple[float, float, float, float]:
    """(min, median, min / baseline's min, median / baseline's median)."""
    base, s = samples[baseline], samples[name]
    lo, med = min(s), statistics.median(s)
    return lo, med, lo / min(base), med / statistics.median(base)


def render(args: argparse.Namespace, project: bl.Project, todo: list[Case],
           samples: dict[str, list[float]], cpu: dict[str, list[float]]) -> str:
    rows = []
    for case in todo:
        lo, med, ratio_min, ratio_med = ratios(samples, case.name, case.baseline)
        _, _, cpu_min, cpu_med = ratios(cpu, case.name, case.baseline)
        if case.target is None:
            met, target = "", ""
        elif case.ratio:
            met = "met" if max(ratio_min, ratio_med) <= case.target else "MISSED"
            target = f"<= {case.target:g}x"
        else:
            met = "met" if med * 1000 <= case.target else "MISSED"
            target = f"<= {case.target:g} ms median"
        rows.append([case.name, f"{bl.fmt_seconds(lo)} / {bl.fmt_seconds(med)}",
                     f"{ratio_min:.2f}x / {ratio_med:.2f}x", f"{cpu_min:.2f}x / {cpu_med:.2f}x",
                     target, met])
    load = os.getloadavg()
    out = [
        f"# bench_latency: {project.describe()}, {args.checkpoints:,} checkpoints, "
        f"{args.repeats} repeats",
        "",
        "Wall time of whole processes (min / median) and its ratio to the baseline's "
        "(min / min, median / median; the hooks' to a bare Python started as they are, "
        "through `bash -c`); CPU time (user + system) as the same ratios, "
        "steadier on a loaded machine. Targets: milliseconds on the wall-time median, or "
        "a ratio on the wall-time ratios (min and median).",
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
