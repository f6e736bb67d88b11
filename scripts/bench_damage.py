"""What the damaged-store safety costs, and what it buys (issue 10).

1. Reading every object of a checkpoint in process: libgit2's loose reader (the
   patched build) against rewindfs's Python-verified reader (store.objects.odbguard, the
   fallback for a stock pygit2), same store, same process.
2. CLI commands with the fallback on and off (REWIND_LOOSE_GUARD), same libgit2.
3. Time until a command on a store with one truncated loose commit gives up:
   patched libgit2, the fallback with the stock PyPI pygit2, and the stock pygit2
   with the fallback off (it never ends: killed at the limit, then the watchdog).
4. The watchdog's cost per command (REWIND_STALL_SECONDS=0 turns it off).

Prints min and median of each; ratios against the baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from rewindfs.store import Layout, Store, take  # noqa: E402
from rewindfs.store.objects import odbguard

ROOT = Path(__file__).resolve().parent.parent
REWIND = str(Path(sys.executable).parent / "rewind")


def _stats(samples: list[float]) -> str:
    fmt = benchlib.fmt_seconds
    return f"{fmt(min(samples))} / {fmt(statistics.median(samples))}"


def _ratio(base: list[float], ours: list[float]) -> str:
    return f"{statistics.median(ours) / statistics.median(base):.2f}x"


def _read_all(repo: pygit2.Repository, tree_id: str) -> int:
    total = 0
    stack = [repo[tree_id]]
    while stack:
        for entry in stack.pop():
            obj = repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                stack.append(obj)
            else:
                total += len(obj.data)
    return total


def _cli(home: Path, args: list[str], env: dict[str, str], timeout: float | None = None
         ) -> tuple[float, int | None]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    full.update(HERMES_HOME=str(home), **env)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([REWIND, *args], env=full, capture_output=True, timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    return time.perf_counter() - t0, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--mib", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hang-limit", type=float, default=30.0,
                        help="seconds before a command that never ends is killed")
    args = parser.parse_args()
    stock = subprocess.run([str(ROOT / "scripts" / "build_pygit2"), "--stock"],
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHON": sys.executable}).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="bench-damage-"))
    try:
        home = work / "home"
        project = benchlib.generate_project(work / "proj", files=args.files,
                                            total_bytes=args.mib * benchlib.MiB,
                                            node_modules_files=0, binary_bytes=0)
        (project.root / "Makefile").write_text("all:\n")
        store = Store(Layout(home / "checkpoints"))
        result = take(store, project.root, "bench")
        objects = store.layout.store / "objects"
        tree = str(pygit2.Repository(str(store.layout.store))[result.commit].tree_id)

        print(f"# bench_damage: {project.describe()}, one checkpoint, all objects loose")
        for key, value in benchlib.machine_info():
            print(f"- {key}: {value}")
        print(f"- pygit2 {pygit2.__version__}, libgit2 {pygit2.LIBGIT2_VERSION}")
        rows = []

        # 1. in process
        plain = pygit2.Repository(str(store.layout.store))
        guarded = pygit2.Repository(str(store.layout.store))
        odbguard.install(guarded, objects, force=True)
        fns = {"libgit2": lambda: _read_all(plain, tree),
               "verified": lambda: _read_all(guarded, tree)}
        for repo in (plain, guarded):
            _read_all(repo, tree)  # warm the page cache for both
        timings = benchlib.measure(fns, args.repeats)
        base, ours = timings["libgit2"].samples, timings["verified"].samples
        rows.append(["read every object of the checkpoint (in process)", _stats(base),
                     _stats(ours), _ratio(base, ours)])

        # 2. CLI, fallback off / on, same libgit2
        export = work / "export"
        cases = {
            "rewind list": ["list", str(project.root)],
            "rewind diff 1 (no changes)": ["diff", "1", "-C", str(project.root)],
            "rewind checkpoint (no changes)": ["checkpoint", str(project.root)],
            "rewind restore --to (reads every blob)": ["restore", result.commit, "-C",
                                                       str(project.root), "--to", str(export)],
        }
        for label, argv in cases.items():
            samples: dict[str, list[float]] = {"off": [], "on": []}
            for i in range(args.repeats):
                for mode in (("off", "on") if i % 2 == 0 else ("on", "off")):
                    shutil.rmtree(export, ignore_errors=True)
                    seconds, code = _cli(home, argv, {"REWIND_LOOSE_GUARD": mode})
                    assert code == 0, (label, mode, code)
                    samples[mode].append(seconds)
            rows.append([label, _stats(samples["off"]), _stats(samples["on"]),
                         _ratio(samples["off"], samples["on"])])

        # 4. watchdog cost
        samples = {"0": [], "120": []}
        for i in range(args.repeats * 2):
            for value in (("0", "120") if i % 2 == 0 else ("120", "0")):
                seconds, code = _cli(home, ["list", str(project.root)],
                                     {"REWIND_STALL_SECONDS": value})
                samples[value].append(seconds)
        watchdog_row = ["`rewind list`, watchdog off / on", _stats(samples["0"]),
                        _stats(samples["120"]), _ratio(samples["0"], samples["120"])]

        print()
        print(benchlib.markdown_table(
            ["case", "libgit2 reader (min / median)", "Python-verified (min / median)",
             "ratio"], rows))
        print()
        print(benchlib.markdown_table(["case", "off (min / median)", "on (min / median)",
                                       "ratio"], [watchdog_row]))

        # 3. time to give up on a truncated commit
        loose = objects / result.commit[:2] / result.commit[2:]
        data = loose.read_bytes()
        os.chmod(loose, 0o644)
        loose.write_bytes(data[: len(data) // 2])
        modes = {
            "patched libgit2": {},
            "patched libgit2 + Python-verified reads": {"REWIND_LOOSE_GUARD": "on"},
            "stock pygit2 (PyPI), Python-verified reads (the fallback)": {"PYTHONPATH": stock},
            "stock pygit2, fallback off, watchdog at 5 s": {
                "PYTHONPATH": stock, "REWIND_LOOSE_GUARD": "off", "REWIND_STALL_SECONDS": "5"},
            "stock pygit2, fallback off, no watchdog (before this work)": {
                "PYTHONPATH": stock, "REWIND_LOOSE_GUARD": "off", "REWIND_STALL_SECONDS": "0"},
        }
        fail_rows = []
        for label, env in modes.items():
            times, codes = [], set()
            hang = "no watchdog" in label
            for _ in range(1 if hang else args.repeats):
                seconds, code = _cli(home, ["list", str(project.root)], env,
                                     timeout=args.hang_limit)
                times.append(seconds)
                codes.add(code)
            ended = "never (killed at the limit)" if None in codes else \
                f"exit {', '.join(map(str, sorted(codes)))}"
            fail_rows.append([label, _stats(times) if None not in codes else
                              f"> {args.hang_limit:.0f} s", ended])
        print()
        print(benchlib.markdown_table(["`rewind list` on a truncated commit",
                                       "time to fail (min / median)", "outcome"], fail_rows))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
