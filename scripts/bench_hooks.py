"""Agent hook latency (issue 26): `python -I -m rewindfs.hooks claude-code` (what `rewind
hooks install` writes: hooks.agents.hook_argv) on a Claude Code
PreToolUse payload, against a bare `python -c pass` of the same interpreter, in the same run.

Cases (targets: ratio to the baseline, min and median of the repeats):
  harmless     `ls -la` (no checkpoint)                                   <= 2x
  unchanged    `rm -rf build` in a 5,000-file project, nothing changed      <= 5x
  one-change   `rm -rf build` after one file of 5,000 changed               <= 6x
  fail-safe    `make test`, nothing changed: checkpointed since issue 47 (the gate checks
               only that a command is known to change nothing), as `unchanged` costs
  two-projects `cp -r src ../other/`, nothing changed in either: the project it names is
               checkpointed too (issue 47's reach), one more helper call
  after-unchanged   its PostToolUse (issue 45), the call changed nothing      -
  after-one-change  its PostToolUse after the call changed one file           -

Then what the fail-safe gate costs a session (issue 47): SESSION, the commands of a
typical coding agent's session, each judged by the old gate (the classifier) and the new
one (the allowlist), costed at the medians above (a command that checkpoints with nothing
changed as `unchanged`, a harmless one as `harmless`), per command and per minute at an
agent's pace of COMMANDS_PER_MINUTE.

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
# A coding agent's session, as such sessions go: looking around, reading, searching, tests
# and builds, git, scripts, a few removals (60 commands).
SESSION = [
    "ls -la", "git status", "cat README.md", "ls src", "rg -n 'def main' src",
    "cat src/app.py", "git log --oneline -10", "find . -name '*.py' | head -50",
    "grep -rn TODO src", "head -n 40 src/core.py", "python3 -m pytest -q", "git diff",
    "npm test", "cat package.json", "make build", "git diff --stat", "wc -l src/*.py",
    "python3 -c 'import app; print(app.VERSION)'", "ls tests", "pytest tests/test_app.py -q",
    "git status --short", "sed -n 1,80p src/app.py", "npm run lint", "cat tests/test_app.py",
    "rg TODO", "git show HEAD --stat", "make test", "python3 scripts/gen.py", "ls -la build",
    "rm -rf build", "make", "git add -A", "git status", "pytest -q", "git diff --cached",
    "cat Makefile", "find src -type f | wc -l", "node scripts/check.js", "npm install",
    "git log -3", "grep -n import src/app.py", "ruff check .", "pip list", "which python3",
    "python3 -m pytest -x", "cat src/util.py", "git stash list", "ls -la src/util",
    "tail -n 50 app.log", "du -sh .", "mkdir -p tmp", "echo done", "git branch -a",
    "pytest -q -k api", "cat .gitignore", "rm tmp/out.txt", "git diff HEAD~1",
    "cargo build", "go test ./...", "git status",
]
COMMANDS_PER_MINUTE = (2, 10)   # a slow and a busy agent


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
            k: [] for k in ("baseline", *TARGETS, "fail-safe", "two-projects",
                            "after-unchanged", "after-one-change")}
        other = root / "other"   # a second project, beside the first
        other.mkdir()
        (other / "package.json").write_text("{}\n")
        runs = {
            "baseline": lambda n: timed([sys.executable, "-c", "pass"], b"", env),
            "harmless": lambda n: timed(hook, payload(project.root, "ls -la", n), env),
            "unchanged": lambda n: timed(hook, payload(project.root, "rm -rf build", n), env),
            "fail-safe": lambda n: timed(hook, payload(project.root, "make test", n), env),
            "two-projects": lambda n: timed(hook, payload(project.root, "cp -r src ../other/",
                                                          n), env),
        }
        for n in range(1, args.repeats + 1):
            # The no-change case is the one store.stamp serves: a checkpoint taken (its
            # files older than stamp.RACY_NS), its stamp written (in the background).
            runs["unchanged"](0)
            runs["two-projects"](0)
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
        session_cost({name: statistics.median(w for w, _ in pairs)
                      for name, pairs in samples.items()})


def session_cost(median: dict[str, float]) -> None:
    """What each gate costs SESSION, at the medians measured."""
    from rewindfs.agent.classify import classify
    from rewindfs.hooks.gate import due

    gates = {"old gate (the classifier)": lambda c: classify(c)[0], "fail-safe gate": due}
    rows = []
    for name, checkpoints in gates.items():
        taken = sum(bool(checkpoints(c)) for c in SESSION)
        per = (taken * median["unchanged"] + (len(SESSION) - taken) * median["harmless"]) \
            / len(SESSION)
        slow, busy = (per * cpm for cpm in COMMANDS_PER_MINUTE)
        rows.append([name, f"{taken} of {len(SESSION)}", f"{per * 1000:.1f} ms",
                     f"{slow:.2f} s ({slow / 60:.2%})", f"{busy:.2f} s ({busy / 60:.2%})"])
    print(f"## what the gate costs a session ({len(SESSION)} commands; a checkpointed "
          "command with nothing changed at the `unchanged` median)\n")
    print(benchlib.markdown_table(
        ["gate", "commands checkpointed", "hook time per command",
         f"per minute at {COMMANDS_PER_MINUTE[0]} commands/min",
         f"per minute at {COMMANDS_PER_MINUTE[1]} commands/min"], rows))


if __name__ == "__main__":
    main()
