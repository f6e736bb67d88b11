"""Agent hook latency (issue 26): `python -I -m rewindfs.hooks claude-code` (what `rewind
hooks install` writes: hooks.agents.hook_argv) on a Claude Code
PreToolUse payload, against a bare `python -c pass` of the same interpreter, in the same run.

Cases (targets: ratio to the baseline, min and median of the repeats):
  harmless     `ls -la` (no checkpoint)                                   <= 2x
  unchanged    `rm -rf build` in a 5,000-file project, nothing changed      <= 5x
  one-change   `rm -rf build` after one file of 5,000 changed               <= 6x
  after-unchanged   its PostToolUse (issue 45), the call changed nothing      -
  after-one-change  its PostToolUse after the call changed one file           -

Each repeat times the baseline and the three cases in alternating order. Wall time is
what an agent waits; CPU time (user + system of the child) is printed too because on a
loaded shared machine it moves much less than wall time. Not a test: it asserts nothing.
Check `uptime` first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from rewindfs.hooks import helper  # noqa: E402
from rewindfs.hooks.agents import hook_argv  # noqa: E402

TARGETS = {"harmless": 2.0, "unchanged": 5.0, "one-change": 6.0}


def payload(cwd: Path, command: str, n: int, event: str = "PreToolUse") -> bytes:
    return json.dumps({"session_id": "bench", "prompt_id": "turn-1", "cwd": str(cwd),
                       "hook_event_name": event, "tool_name": "Bash",
                       "tool_input": {"command": command}, "tool_use_id": f"t{n}"}).encode()


def timed(argv: list[str], data: bytes, env: dict[str, str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, input=data, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def wait_until(predicate, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        time.sleep(0.01)


def wait_for_stamp(hermes: Path) -> None:
    wait_until(lambda: any((hermes / "checkpoints" / "store" / "stamps").glob("*.json")))


def wait_for_current_stamp(hermes: Path) -> None:
    """Until the stamp describes the newest checkpoint (written after it, in the
    background): what an after event finds when its call took a while."""
    from rewindfs.store.history import stamp

    store = hermes / "checkpoints" / "store"

    def current() -> bool:
        for path in (store / "stamps").glob("*.json"):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                return False
            return data.get("commit") == stamp.tip(store, path.stem)
        return False

    wait_until(current)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--files", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        root = Path(tmp)
        project = benchlib.generate_project(root / "proj", files=args.files,
                                            total_bytes=20 * benchlib.MiB,
                                            node_modules_files=200, binary_bytes=0)
        (project.root / "package.json").write_text("{}\n")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root),
               "HERMES_HOME": str(root / "hermes")}
        hook = hook_argv("claude-code")   # what `rewind hooks install` writes
        # The first checkpoint (the whole tree) is not what a hook usually pays: take it first.
        subprocess.run(hook, input=payload(project.root, "rm -rf build", 0), env=env, check=True)
        samples: dict[str, list[tuple[float, float]]] = {
            k: [] for k in ("baseline", *TARGETS, "after-unchanged", "after-one-change")}
        runs = {
            "baseline": lambda n: timed([sys.executable, "-c", "pass"], b"", env),
            "harmless": lambda n: timed(hook, payload(project.root, "ls -la", n), env),
            "unchanged": lambda n: timed(hook, payload(project.root, "rm -rf build", n), env),
        }
        for n in range(1, args.repeats + 1):
            # The no-change case is the one store.stamp serves: a checkpoint taken (its
            # files older than stamp.RACY_NS), its stamp written (in the background).
            runs["unchanged"](0)
            wait_for_stamp(root / "hermes")
            wait_until(lambda: helper.running(root / "hermes" / "rewind-hooks") is not None)
            for name in (runs if n % 2 else reversed(runs)):
                samples[name].append(runs[name](n))
            benchlib.touch_one_file(project, n)   # untimed setup of the one-change case
            samples["one-change"].append(timed(hook, payload(project.root, "rm -rf build", n),
                                               env))
            # The call's after event: it changed nothing (its before was just taken and its
            # stamp written), then one file (the call's own change).
            wait_for_current_stamp(root / "hermes")
            samples["after-unchanged"].append(timed(
                hook, payload(project.root, "rm -rf build", n, "PostToolUse"), env))
            runs["unchanged"](1000 + n)   # another call's before, untimed
            wait_for_current_stamp(root / "hermes")
            benchlib.touch_one_file(project, 1000 + n)
            samples["after-one-change"].append(timed(
                hook, payload(project.root, "rm -rf build", 1000 + n, "PostToolUse"), env))
        log = (root / "hermes" / "rewind-hooks" / "hook.log").read_text()
        served = log.count("nothing changed (stamp)")
        taken = [line for line in log.splitlines() if " info checkpoint of " in line]
        by_helper = sum("by the helper" in line for line in taken)
        helper.stop(root / "hermes" / "rewind-hooks")
        print(f"## hook latency ({args.files:,} files, {args.repeats} repeats, "
              f"load {os.getloadavg()[0]:.2f})\n")
        print(f"no-change calls the stamp answered (no repository opened): {served} "
              f"of {2 * args.repeats}; "
              f"checkpoints the helper took: {by_helper} of {len(taken)}\n")
        for which, label in ((0, "wall"), (1, "cpu")):
            base = [s[which] for s in samples["baseline"]]
            base_min, base_med = min(base), statistics.median(base)
            rows = []
            for name, pairs in samples.items():
                values = [s[which] for s in pairs]
                lo, med = min(values), statistics.median(values)
                target = TARGETS.get(name)
                rows.append([name, f"{lo * 1000:.1f} ms", f"{med * 1000:.1f} ms",
                             f"{lo / base_min:.2f}x", f"{med / base_med:.2f}x",
                             f"<= {target:g}x" if target else "-"])
            print(f"{label} time:\n")
            print(benchlib.markdown_table(
                ["case", "min", "median", "min ratio", "median ratio", "target"], rows))
            print()


if __name__ == "__main__":
    main()
