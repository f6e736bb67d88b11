"""Benchmark: store maintenance — checkpoints next to pruning and gc, status, prune.

Cases (baseline and rewindfs measured in this one run, on the same machine state)
  1 checkpoint at max_snapshots=20 (the boundary moves)   target: <= 2x a normal checkpoint
  2 checkpoint that starts the automatic sweep, store
    over max_total_size_mb (the sweep runs detached)        target: <= 2x a normal checkpoint
  3 checkpoint while gc (repack + prune) runs               target: < normal + 100 ms
  4 `rewind status`, 50 projects x 20 checkpoints          target: < 1 s (Hermes's
    store_status on the same store shown for reference)
  5 pruning 50 stale projects (`rewind prune -f`, with gc) target: < 10 s (Hermes's
    prune_checkpoints on a copy of the same store shown for reference); bytes freed
  6 explicit prune with a size cap of half the live size     target: < 10 s; bytes freed
    (`rewind prune -f --max-size-mb N`) of 50 projects x 20
    checkpoints of 40 KB each, next to the automatic sweep doing
    the same work with gc's grace period (both as processes)

The "normal checkpoint" baseline is the same one-file change checkpointed by a
manager whose history is below max_snapshots, with auto-prune off, timed in the
same repeats (alternating which goes first). Benchmarks are not tests: a missed
target is reported, never an exit status; misbehaviour (a checkpoint not taken, a
project not removed) exits 1.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

MAX_SNAPSHOTS = 20
DAY = 86400
NORMAL = "normal checkpoint"
OURS = "rewindfs"


@dataclass
class Row:
    case: str
    baseline: float | None
    ours: float | None
    target: str
    max_ratio: float | None = None  # ours / baseline must stay at or under this
    max_extra: float | None = None  # ours - baseline must stay under this (seconds)
    max_seconds: float | None = None
    baseline_label: str = ""

    def cells(self) -> list[str]:
        ratio = self.ours / self.baseline if self.baseline and self.ours else None
        base = bl.fmt_seconds(self.baseline) if self.baseline is not None else "n/a"
        if self.baseline_label:
            base = f"{base} ({self.baseline_label})"
        return [self.case, base, bl.fmt_seconds(self.ours),
                f"{ratio:.2f}x" if ratio is not None else "n/a", self.target, self.met(ratio)]

    def met(self, ratio: float | None) -> str:
        ok = self.ours is not None
        if self.max_ratio is not None:
            ok = ok and ratio is not None and ratio <= self.max_ratio
        if self.max_extra is not None:
            ok = ok and self.baseline is not None and self.ours - self.baseline < self.max_extra
        if self.max_seconds is not None:
            ok = ok and self.ours < self.max_seconds
        return "yes" if ok else "**NO**"


@dataclass
class Run:
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def record(self, case: str, timings: dict[str, bl.Timing]) -> None:
        self.details.append(f"{case}: " + "; ".join(
            f"{name}: [{', '.join(bl.fmt_seconds(s) for s in t.samples)}]"
            for name, t in timings.items()))

    def expect(self, case: str, timings: dict[str, bl.Timing], expected: object) -> None:
        for name, t in timings.items():
            bad = [r for r in t.results if r != expected]
            if bad:
                self.problems.append(f"{case}: {name} returned {bad[0]!r} in {len(bad)} runs")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_maintenance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smaller project, fewer repeats")
    p.add_argument("--repeats", type=int, default=7, metavar="N",
                   help="repeats of the checkpoint cases (default 7)")
    p.add_argument("--slow-repeats", type=int, default=3, metavar="N",
                   help="repeats of status and prune (default 3)")
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    p.add_argument("--tmp", type=Path, metavar="DIR", help="parent for the tmp dir")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.repeats, args.slow_repeats = min(args.repeats, 3), 1
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    rep = bl.Reporter()
    tmp = Path(tempfile.mkdtemp(prefix="bench_maintenance.", dir=args.tmp)).resolve()
    os.environ["HERMES_HOME"] = str(tmp / "home")  # never the user's ~/.hermes
    run = Run()
    try:
        checkpoint_cases(args, tmp, run, rep)
        store_cases(args, tmp, run, rep)
        explicit_prune_case(args, tmp, run, rep)
    finally:
        if args.keep:
            rep.progress(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report = render(args, run)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    return 1 if run.problems else 0


# -- cases 1-3: checkpoints ----------------------------------------------------------------

def checkpoint_cases(args, tmp: Path, run: Run, rep: bl.Reporter) -> None:
    from rewindfs import CheckpointManager
    from rewindfs.store.maintenance import gc
    from rewindfs.store.objects.layout import Layout

    scale = 4 if args.quick else 1
    rep.progress("generating the project")
    project = bl.generate_project(tmp / "project", files=2_000 // scale,
                                  total_bytes=20 * bl.MiB // scale, node_modules_files=0,
                                  binary_bytes=0)
    wd = str(project.root)
    edits = iter(range(10**9))

    def manager(name: str, **kwargs) -> CheckpointManager:
        kwargs.setdefault("auto_prune", False)
        return CheckpointManager(enabled=True, base=tmp / name, **kwargs)

    normal = manager("normal", max_snapshots=10_000)
    capped = manager("capped", max_snapshots=MAX_SNAPSHOTS)
    sweeping = manager("over-cap", max_snapshots=MAX_SNAPSHOTS, max_total_size_mb=1,
                       auto_prune=True, retention_days=7, min_interval_hours=24)

    def take(mgr: CheckpointManager) -> Callable[[], bool]:
        def call() -> bool:
            mgr.new_turn()
            return mgr.ensure_checkpoint(wd, "bench")
        return call

    rep.progress(f"filling histories to {MAX_SNAPSHOTS} checkpoints")
    for _ in range(MAX_SNAPSHOTS + 2):
        bl.touch_one_file(project, next(edits))
        for mgr in (normal, capped, sweeping):
            take(mgr)()

    # 1. at max_snapshots: every checkpoint moves the boundary
    case = f"1. checkpoint at max_snapshots={MAX_SNAPSHOTS}"
    rep.progress(case)
    t = bl.measure({NORMAL: take(normal), OURS: take(capped)}, args.repeats,
                   setup=lambda _i: bl.touch_one_file(project, next(edits)))
    run.expect(case, t, True)
    run.record(case, t)
    run.rows.append(Row(case, t[NORMAL].median, t[OURS].median, "<= 2x", max_ratio=2.0))

    # 2. the checkpoint that starts the automatic sweep (marker due, store over its cap)
    layout = Layout(tmp / "over-cap")

    def due(_i: int) -> None:
        wait_for_sweep(layout)
        layout.prune_marker.write_text("corrupt: counts as never run")
        sweeping._next_prune_check = 0.0
        bl.touch_one_file(project, next(edits))

    case = "2. checkpoint starting the auto sweep (over size cap)"
    rep.progress(case)
    t = bl.measure({NORMAL: take(normal), OURS: take(sweeping)}, args.repeats, setup=due)
    wait_for_sweep(layout)
    run.expect(case, t, True)
    run.record(case, t)
    run.rows.append(Row(case, t[NORMAL].median, t[OURS].median, "<= 2x", max_ratio=2.0))
    log = layout.store / "maintenance.log"
    sweeps = log.read_text().count("automatic prune:") if log.exists() else 0
    if sweeps < args.repeats:
        run.problems.append(f"{case}: {sweeps} sweeps ran for {args.repeats} due checkpoints")
    run.notes.append(f"case 2: the store holds ~{project.total_bytes // bl.MiB} MB against a "
                     "1 MB cap; each timed checkpoint started a sweep (size cap + gc) in a "
                     f"detached process ({sweeps} ran); the next repeat waited for it to end")

    # 3. a checkpoint while gc runs on the same store (the baseline runs without any gc)
    capped_layout = Layout(tmp / "capped")
    case = "3. checkpoint while gc runs"
    rep.progress(case)
    t = {NORMAL: bl.Timing(), OURS: bl.Timing()}
    overlapped = 0
    for _ in range(args.repeats):
        bl.touch_one_file(project, next(edits))
        elapsed, taken = bl.time_call(take(normal))
        t[NORMAL].samples.append(elapsed)
        t[NORMAL].results.append(taken)
        thread = threading.Thread(target=gc.gc, args=(capped_layout, gc.GRACE_MINUTES),
                                  kwargs={"wait": True})
        thread.start()
        time.sleep(0.03)  # let git get going
        elapsed, taken = bl.time_call(take(capped))
        overlapped += thread.is_alive()
        t[OURS].samples.append(elapsed)
        t[OURS].results.append(taken)
        thread.join()
    run.expect(case, t, True)
    run.record(case, t)
    run.rows.append(Row(case, t[NORMAL].median, t[OURS].median, "< normal + 100 ms",
                        max_extra=0.1))
    run.notes.append(f"case 3: gc was still running when {overlapped} of {args.repeats} "
                     "checkpoints finished")
    run.notes.append(f"project for cases 1-3: {project.describe()}")


def wait_for_sweep(layout, timeout: float = 120) -> None:
    """Until the sweep a due checkpoint started has run: the detached child marks the
    marker (corrupt until then) under its lock before it sweeps, then lets the lock go."""
    from rewindfs.store.maintenance import auto
    from rewindfs.store.objects import marker

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (marker.last_run(layout) is None
                                           or auto.running(layout)):
        time.sleep(0.05)


# -- cases 4-5: status and prune of 50 projects ---------------------------------------------

PROJECTS = 50
FILES = 30


def build_store(home: Path, root: Path, rep: bl.Reporter) -> list[Path]:
    """50 projects x 20 checkpoints (30 files each, two edited per checkpoint)."""
    from rewindfs.store import Layout, Store, take

    store = Store(Layout(home / "checkpoints"))
    dirs = []
    for p in range(PROJECTS):
        wd = root / f"project{p:02d}"
        (wd / "src").mkdir(parents=True)
        for f in range(FILES):
            (wd / "src" / f"m{f}.py").write_text(f"# project {p} module {f}\n" * 40)
        for c in range(MAX_SNAPSHOTS):
            for f in (c % FILES, (c * 7 + 3) % FILES):
                with open(wd / "src" / f"m{f}.py", "a") as fh:
                    fh.write(f"value_{c} = {c * p}\n")
            take(store, wd, f"step {c}", keep=MAX_SNAPSHOTS)
        dirs.append(wd)
        if p % 10 == 9:
            rep.progress(f"  {p + 1} projects")
    return dirs


def rewind_cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    rewind = shutil.which("rewind", path=os.path.dirname(sys.executable)) or "rewind"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    env["HERMES_HOME"] = str(home)
    return subprocess.run([rewind, *args], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)


def store_cases(args, tmp: Path, run: Run, rep: bl.Reporter) -> None:
    from rewindfs.store.maintenance.status import store_status
    from rewindfs.store.objects.layout import Layout

    try:
        import tools.checkpoint_manager as hcm
    except Exception as exc:  # noqa: BLE001 - the reference column is optional
        hcm = None
        run.notes.append(f"Hermes 0.19 not importable ({exc}): no reference column")
    home = tmp / "status-home"
    rep.progress(f"building {PROJECTS} projects x {MAX_SNAPSHOTS} checkpoints")
    build_store(home, tmp / "projects", rep)
    layout = Layout(home / "checkpoints")

    case = f"4. rewind status, {PROJECTS} projects x {MAX_SNAPSHOTS} checkpoints"
    rep.progress(case)
    fns: dict[str, Callable[[], object]] = {
        OURS: lambda: rewind_cli(home, "status").returncode,
        "in process": lambda: store_status(layout, 7).project_count,
    }
    if hcm is not None:
        fns["Hermes store_status()"] = lambda: hcm.store_status(layout.base)["project_count"]
    t = bl.measure(fns, args.slow_repeats)
    run.record(case, t)
    if any(r != 0 for r in t[OURS].results) or t["in process"].results[-1] != PROJECTS:
        run.problems.append(f"{case}: status failed or miscounted {t['in process'].results}")
    hermes = t.get("Hermes store_status()")
    run.rows.append(Row(case, hermes.median if hermes else None, t[OURS].median, "< 1 s",
                        max_seconds=1.0, baseline_label="Hermes, in process"))
    run.rows.append(Row(case + " (in process)", hermes.median if hermes else None,
                        t["in process"].median, "—", baseline_label="Hermes, in process"))
    data = json.loads(rewind_cli(home, "status", "--json").stdout)
    sizes = sorted(p["size_bytes"] for p in data["projects"])
    run.notes.append(f"case 4: store {data['store_size_bytes'] // 1024} KB; per-project SIZE "
                     f"{sizes[0]}..{sizes[-1]} bytes; checkpoints per project "
                     f"{sorted({p['checkpoints'] for p in data['projects']})}")

    case = f"5. prune {PROJECTS} stale projects (with gc)"
    rep.progress(case)
    copies = iter(range(10**9))
    current: dict[str, Path] = {}

    def stale_copies(_i: int) -> None:
        n = next(copies)
        for who in ("ours", "hermes"):
            dest = tmp / f"prune-{who}-{n}"
            shutil.copytree(home, dest, symlinks=True)
            for record in (dest / "checkpoints" / "store" / "projects").glob("*.json"):
                data = json.loads(record.read_text())
                data["last_touch"] = time.time() - 30 * DAY
                record.write_text(json.dumps(data))
            current[who] = dest

    fns = {OURS: lambda: json.loads(rewind_cli(current["ours"], "prune", "-f", "--json").stdout)}
    if hcm is not None:
        fns["Hermes prune_checkpoints()"] = lambda: hcm.prune_checkpoints(
            retention_days=7, checkpoint_base=current["hermes"] / "checkpoints",
            max_total_size_mb=0)
    t = bl.measure(fns, args.slow_repeats, setup=stale_copies)
    run.record(case, t)
    left = list((current["ours"] / "checkpoints" / "store" / "projects").glob("*.json"))
    ours = t[OURS].results
    if any(r.get("deleted_stale") != PROJECTS or r.get("errors") for r in ours) or left:
        run.problems.append(f"{case}: prune reported {ours[-1]}, {len(left)} records left")
    hermes = t.get("Hermes prune_checkpoints()")
    run.rows.append(Row(case, hermes.median if hermes else None, t[OURS].median, "< 10 s",
                        max_seconds=10.0, baseline_label="Hermes, in process"))
    freed = sorted(r["bytes_freed"] for r in ours)
    theirs = sorted(r["bytes_freed"] for r in hermes.results) if hermes else []
    run.notes.append(f"case 5: bytes freed, rewindfs {_mb(freed)}"
                     + (f", Hermes {_mb(theirs)}" if theirs else "")
                     + f" (store before: {_fmt_bytes(_store_bytes(home))})")



def _fmt_bytes(n: int) -> str:
    return f"{n / bl.MiB:.1f} MB" if n >= bl.MiB else f"{n / 1024:.0f} KB"


def _mb(values: list[int]) -> str:
    """min / median of byte counts."""
    return f"min {_fmt_bytes(values[0])}, median {_fmt_bytes(values[len(values) // 2])}"


def _store_bytes(home: Path) -> int:
    from rewindfs.store.maintenance.sizes import objects_bytes
    from rewindfs.store.objects.layout import Layout

    return objects_bytes(Layout(home / "checkpoints"))


BLOB = 40 * 1024  # the per-checkpoint data file of the case 6 store


def build_big_store(home: Path, root: Path, rep: bl.Reporter) -> None:
    """50 projects x 20 checkpoints, each checkpoint rewriting a 40 KB data file (random
    bytes: nothing to compress or share), so dropped checkpoints leave real garbage."""
    from rewindfs.store import Layout, Store, take

    store = Store(Layout(home / "checkpoints"))
    for p in range(PROJECTS):
        wd = root / f"big{p:02d}"
        (wd / "src").mkdir(parents=True)
        for f in range(10):
            (wd / "src" / f"m{f}.py").write_text(f"# project {p} module {f}\n" * 40)
        for c in range(MAX_SNAPSHOTS):
            (wd / "data.bin").write_bytes(os.urandom(BLOB))
            take(store, wd, f"step {c}", keep=MAX_SNAPSHOTS)
        if p % 10 == 9:
            rep.progress(f"  {p + 1} projects")


def explicit_prune_case(args, tmp: Path, run: Run, rep: bl.Reporter) -> None:
    """6. `rewind prune --max-size-mb N` on a 50-project store, N half its live size: the
    size cap drops the oldest checkpoints round-robin and the explicit prune frees their
    space at once; the baseline is the automatic sweep doing the same work (its own
    process, as the agent API starts it), whose gc keeps a 15-minute grace period."""
    from rewindfs.store.maintenance.sizes import live_bytes, objects_bytes
    from rewindfs.store.objects.layout import Layout
    from rewindfs.store.objects.repo import Store

    home = tmp / "cap-home"
    rep.progress(f"building {PROJECTS} projects x {MAX_SNAPSHOTS} checkpoints of "
                 f"{BLOB // 1024} KB")
    build_big_store(home, tmp / "big-projects", rep)
    layout = Layout(home / "checkpoints")
    live = live_bytes(layout, list(Store(layout).repo.references))
    cap_mb = max(1, live // 2 // bl.MiB)
    case = f"6. explicit prune to a {cap_mb} MB cap, {PROJECTS} projects"
    rep.progress(case)
    copies = iter(range(10**9))
    current: dict[str, Path] = {}

    def fresh_copies(_i: int) -> None:
        n = next(copies)
        for who in ("explicit", "automatic"):
            dest = tmp / f"cap-{who}-{n}"
            shutil.copytree(home, dest, symlinks=True)
            current[who] = dest

    def automatic() -> dict:
        base = current["automatic"] / "checkpoints"
        (base / ".last_prune").unlink(missing_ok=True)  # due now
        proc = subprocess.run(
            [sys.executable, "-m", "rewindfs.store.maintenance.auto", "--base", str(base),
             "--retention-days", "7", "--max-size-mb", str(cap_mb)],
            capture_output=True, text=True, timeout=600)
        log = (base / "store" / "maintenance.log").read_text()
        line = [x for x in log.splitlines() if "automatic prune:" in x][-1]
        report = ast.literal_eval(line.split("automatic prune: ", 1)[1])
        return {**report, "exit": proc.returncode}

    fns = {
        OURS: lambda: json.loads(rewind_cli(current["explicit"], "prune", "-f", "--json",
                                            "--max-size-mb", str(cap_mb)).stdout),
        "automatic sweep": automatic,
    }
    t = bl.measure(fns, args.slow_repeats, setup=fresh_copies)
    run.record(case, t)
    ours, auto = t[OURS].results, t["automatic sweep"].results
    if any(not r.get("dropped_checkpoints") or r.get("errors") for r in ours + auto):
        run.problems.append(f"{case}: prune reported {ours[-1]} / {auto[-1]}")
    run.rows.append(Row(case, t["automatic sweep"].median, t[OURS].median, "< 10 s",
                        max_seconds=10.0, baseline_label="automatic sweep"))
    before = objects_bytes(layout)
    run.notes.append(
        f"case 6: store {_fmt_bytes(before)} ({_fmt_bytes(live)} live), cap {cap_mb} MB: "
        f"{ours[-1]['dropped_checkpoints']} checkpoints dropped; bytes freed by the explicit "
        f"prune {_mb(sorted(r['bytes_freed'] for r in ours))} (store after: "
        f"{_fmt_bytes(objects_bytes(Layout(current['explicit'] / 'checkpoints')))}), by the "
        f"automatic sweep {_mb(sorted(r['bytes_freed'] for r in auto))} (store after: "
        f"{_fmt_bytes(objects_bytes(Layout(current['automatic'] / 'checkpoints')))}: its gc "
        f"keeps objects younger than 15 min); new checkpoints waited "
        f"{_secs(sorted(r['writers_held_seconds'] for r in ours))} for its prune step")


def _secs(values: list[float]) -> str:
    return f"min {bl.fmt_seconds(values[0])}, median {bl.fmt_seconds(values[len(values) // 2])}"


def render(args, run: Run) -> str:
    out = ["## bench_maintenance: checkpoints next to maintenance, status, prune", ""]
    out.append(bl.markdown_table(["case", "baseline", "rewindfs", "ratio (rewindfs/baseline)",
                                  "target", "met?"], [r.cells() for r in run.rows]))
    out += ["", f"Medians of {args.repeats} runs (cases 1-3) and {args.slow_repeats} (4-6). "
            "Baseline for 1-3: a normal checkpoint (history below max_snapshots, auto-prune "
            "off) of the same change; for 4-5: Hermes 0.19 on the same store, for reference "
            "(cases 4 and 5 time the `rewind` command as a process, interpreter start "
            "included).", "", "Machine:"]
    out += [f"- {k}: {v}" for k, v in bl.machine_info()]
    out += ["", "Samples:"] + [f"- {d}" for d in run.details]
    if run.notes:
        out += ["", "Notes:"] + [f"- {n}" for n in run.notes]
    missed = [r.case for r in run.rows if r.cells()[-1] == "**NO**"]
    if missed:
        out += ["", "Missed targets: " + "; ".join(missed)]
    if run.problems:
        out += ["", "PROBLEMS:"] + [f"- {p}" for p in run.problems]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
