"""Benchmark: taking and listing checkpoints, rewindfs vs Hermes Agent 0.19.

Both tools run in this one process, side by side, on the same generated project,
each with its own fresh checkpoint base in a tmp dir. Each case's repeats run both
tools on the same state (alternating which goes first) and the table reports medians.

Cases
  1 first checkpoint (fresh store)                 target: >= 4x; store no bigger than
    1.3x loose objects (what Hermes, git and rewindfs before packs write)
  2 no-change checkpoint                            target: >= 10x
  3 one-file-change checkpoint                      target: >= 10x
  4 checkpoint at max_snapshots=20 (Hermes prunes)  target: >= 20x
  5 list_checkpoints of 20, with stats              target: >= 5x
    5: a history of exactly 20 (the first checkpoint still in it), before any pruning;
    5b: after pruning, same manager; 5c: after pruning, a new manager per call (as a
    `rewind list` process)
  6 200,000 small files, rewindfs only (--big)      targets: first checkpoint < 20 s,
    no-change checkpoint < 1 s (Hermes refuses projects of more than 50,000 files: n/a)
  7 44,000 files / 176 MB, first checkpoint (--big)  target: rewindfs < 5 s

This is a benchmark, not a test: it never fails on a missed target (exit status 0),
but it exits non-zero when a tool misbehaves (a checkpoint not taken, or the two
stores disagreeing on what a checkpoint holds).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

MAX_SNAPSHOTS = 20
HERMES = "Hermes 0.19"
REWIND = "rewindfs"


# --------------------------------------------------------------------------------------
# The two tools behind one interface
# --------------------------------------------------------------------------------------


class HermesTool:
    name = HERMES

    def __init__(self, hcm, base: Path):
        self.hcm = hcm
        self.base = base
        self.mgr = hcm.CheckpointManager(enabled=True, max_snapshots=MAX_SNAPSHOTS)

    def _use_base(self) -> None:
        # CHECKPOINT_BASE is a module constant every Hermes function reads at call time.
        self.hcm.CHECKPOINT_BASE = self.base

    def checkpoint(self, workdir: Path, reason: str) -> bool:
        self._use_base()
        self.mgr.new_turn()
        return self.mgr.ensure_checkpoint(str(workdir), reason)

    def list(self, workdir: Path) -> list[dict]:
        self._use_base()
        return self.mgr.list_checkpoints(str(workdir))


class RewindTool:
    name = REWIND

    def __init__(self, rewindfs, base: Path, **kwargs):
        self.base = base
        self.mgr = rewindfs.CheckpointManager(
            enabled=True, max_snapshots=MAX_SNAPSHOTS, base=base, **kwargs)

    def checkpoint(self, workdir: Path, reason: str) -> bool:
        self.mgr.new_turn()
        return self.mgr.ensure_checkpoint(str(workdir), reason)

    def list(self, workdir: Path) -> list[dict]:
        return self.mgr.list_checkpoints(str(workdir))


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    hermes: float | None  # median seconds; None = not applicable
    rewind: float | None
    target: str
    min_ratio: float | None = None  # target as Hermes/rewindfs ratio
    max_seconds: float | None = None  # target as an absolute rewindfs time
    hermes_note: str = ""
    repeats: str = ""

    def cells(self) -> list[str]:
        ratio_text, ratio = bl.ratio_cell(self.hermes, self.rewind)
        hermes = self.hermes_note or bl.fmt_seconds(self.hermes)
        return [self.case, hermes, bl.fmt_seconds(self.rewind), ratio_text, self.target,
                self.met(ratio)]

    def met(self, ratio: float | None) -> str:
        if self.min_ratio is None and self.max_seconds is None:
            return "—"
        ok = True
        if self.min_ratio is not None:
            ok = ok and ratio is not None and ratio >= self.min_ratio
        if self.max_seconds is not None:
            ok = ok and self.rewind is not None and self.rewind < self.max_seconds
        return "yes" if ok else "**NO**"

    @property
    def missed(self) -> bool:
        return self.cells()[-1] == "**NO**"


@dataclass
class Run:
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # misbehaviour (not slowness)
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # per-case samples
    store_sizes: dict[str, int] = field(default_factory=dict)  # objects after case 1
    profiles: dict[str, bl.Profiler] = field(default_factory=dict)

    def expect(self, case: str, timings: dict[str, bl.Timing], expected: object) -> None:
        for tool, t in timings.items():
            bad = [r for r in t.results if r != expected]
            if bad:
                self.problems.append(
                    f"{case}: {tool} returned {bad[0]!r} (expected {expected!r}) "
                    f"in {len(bad)} of {len(t.results)} runs")

    def record(self, case: str, timings: dict[str, bl.Timing]) -> None:
        parts = []
        for tool, t in timings.items():
            samples = ", ".join(bl.fmt_seconds(s) for s in t.samples)
            parts.append(f"{tool}: [{samples}]")
        self.details.append(f"{case}: " + "; ".join(parts))


# --------------------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench_take", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="1/5 of the project sizes, for a fast smoke run")
    p.add_argument("--big", action=argparse.BooleanOptionalAction, default=True,
                   help="run case 6, the 200,000-file project (default: on)")
    p.add_argument("--repeats", type=int, default=5, metavar="N",
                   help="repeats of the fast cases 2, 3, 5 and 6's no-change (default 5)")
    p.add_argument("--slow-repeats", type=int, default=3, metavar="N",
                   help="repeats of the slow cases 1 and 4 (default 3)")
    p.add_argument("--big-repeats", type=int, default=1, metavar="N",
                   help="repeats of case 6's first checkpoint (default 1)")
    p.add_argument("--seed", type=int, default=1, help="project generator seed (default 1)")
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    p.add_argument("--tmp", type=Path, metavar="DIR",
                   help="parent for the benchmark's tmp dir (default: $TMPDIR)")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir (path printed)")
    p.add_argument("--profile", action="store_true",
                   help="cProfile rewindfs's timed calls and print the top functions per "
                        "case (inflates rewindfs timings)")
    args = p.parse_args(argv)
    for name in ("repeats", "slow_repeats", "big_repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def import_tools(home: Path):
    # Hermes computes CHECKPOINT_BASE from HERMES_HOME at import; point it (and anything
    # else either tool might default to) at the tmp dir, never at the user's ~/.hermes.
    os.environ["HERMES_HOME"] = str(home)
    try:
        import tools.checkpoint_manager as hcm
    except ImportError as exc:
        sys.exit(f"bench_take: cannot import Hermes's tools.checkpoint_manager ({exc}); "
                 "run scripts/setup (hermes-agent is in the test extras)")
    import rewindfs

    return hcm, rewindfs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    rep = bl.Reporter()
    scale = 5 if args.quick else 1
    tmp = Path(tempfile.mkdtemp(prefix="bench_take.", dir=args.tmp)).resolve()
    try:
        hcm, rewindfs = import_tools(tmp / "home")
        run = Run()
        project, big = bench(args, scale, tmp, hcm, rewindfs, run, rep)
    finally:
        if args.keep:
            rep.progress(f"kept {tmp}")
        else:
            rep.progress(f"removing {tmp}")
            shutil.rmtree(tmp, ignore_errors=True)
    report = render(args, run, project, big)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    if args.profile:
        for case, prof in run.profiles.items():
            if prof.calls:
                print(f"\n### cProfile of rewindfs, {case} ({prof.calls} calls)\n")
                print("```\n" + prof.report(30) + "```")
    return 1 if run.problems else 0


def bench(args, scale: int, tmp: Path, hcm, rewindfs, run: Run, rep: bl.Reporter):
    bases = tmp / "bases"
    counter = iter(range(10**9))

    def fresh(kind: str) -> Path:
        path = bases / f"{kind}-{next(counter)}"
        path.mkdir(parents=True)
        return path

    def profilers(case: str) -> dict[str, bl.Profiler] | None:
        if not args.profile:
            return None
        run.profiles[case] = bl.Profiler()
        return {REWIND: run.profiles[case]}

    rep.progress("generating the project")
    project = bl.generate_project(
        tmp / "project", files=5_000 // scale, total_bytes=50 * bl.MiB // scale,
        node_modules_files=2_000 // scale, binary_bytes=12 * bl.MiB, seed=args.seed)
    wd = project.root
    rep.progress(f"project: {project.describe()}")

    # -- 1. first checkpoint into a fresh store ----------------------------------------
    tools: dict[str, HermesTool | RewindTool] = {}

    def new_stores(_i: int) -> None:
        for old in list(tools.values()):
            shutil.rmtree(old.base, ignore_errors=True)
        tools[HERMES] = HermesTool(hcm, fresh("hermes"))
        tools[REWIND] = RewindTool(rewindfs, fresh("rewind"))

    case = "1. first checkpoint (fresh store)"
    rep.progress(case)
    t = bl.measure(
        {HERMES: lambda: tools[HERMES].checkpoint(wd, "first"),
         REWIND: lambda: tools[REWIND].checkpoint(wd, "first")},
        args.slow_repeats, setup=new_stores, profilers=profilers(case))
    run.expect(case, t, True)
    run.record(case, t)
    run.rows.append(Row(case, t[HERMES].median, t[REWIND].median, ">= 4x", min_ratio=4.0))
    hermes, rewind = tools[HERMES], tools[REWIND]
    same_tree(run, case, hermes, rewind, wd)
    sizes = {tool.name: objects_bytes(tool.base) for tool in (hermes, rewind)}
    run.store_sizes = sizes
    oversize = rewind.mgr.last_result.skipped_files.get("oversize", []) \
        if rewind.mgr.last_result else []
    if [str(p) for p in project.oversize] != oversize:
        run.problems.append(f"{case}: rewindfs reported oversize {oversize}, "
                            f"expected {[str(p) for p in project.oversize]}")

    def both(reason: str) -> dict[str, Callable[[], object]]:
        return {HERMES: lambda: hermes.checkpoint(wd, reason),
                REWIND: lambda: rewind.checkpoint(wd, reason)}

    # -- 2. nothing changed ------------------------------------------------------------
    case = "2. no-change checkpoint"
    rep.progress(case)
    t = bl.measure(both("no change"), args.repeats, profilers=profilers(case))
    run.expect(case, t, False)
    run.record(case, t)
    run.rows.append(Row(case, t[HERMES].median, t[REWIND].median, ">= 10x", min_ratio=10))

    # -- 3. one file changed -----------------------------------------------------------
    edits = iter(range(10**9))
    case = "3. one-file-change checkpoint"
    rep.progress(case)
    t = bl.measure(both("one file changed"), args.repeats,
                   setup=lambda _i: bl.touch_one_file(project, next(edits)),
                   profilers=profilers(case))
    run.expect(case, t, True)
    run.record(case, t)
    run.rows.append(Row(case, t[HERMES].median, t[REWIND].median, ">= 10x", min_ratio=10))
    same_tree(run, case, hermes, rewind, wd)

    # -- fill both histories up to max_snapshots (untimed) ------------------------------
    rep.progress(f"filling both histories up to {MAX_SNAPSHOTS} checkpoints")
    for _ in range(2 * MAX_SNAPSHOTS):
        counts = {tool.name: bl.store_tip(tool.base, wd).count for tool in (hermes, rewind)}
        if min(counts.values()) >= MAX_SNAPSHOTS:
            break
        bl.touch_one_file(project, next(edits))
        for tool in (hermes, rewind):
            if counts[tool.name] < MAX_SNAPSHOTS and not tool.checkpoint(wd, "filler"):
                run.problems.append(f"filling: {tool.name} did not take a checkpoint")
    if len(set(counts.values())) != 1:
        run.notes.append(f"checkpoints before case 5: {counts}")

    # -- 5. list 20 checkpoints with stats: a history of exactly 20 (no pruning yet) ----
    def lists() -> dict[str, Callable[[], object]]:
        return {HERMES: lambda: hermes.list(wd), REWIND: lambda: rewind.list(wd)}

    case5 = f"5. list_checkpoints of {MAX_SNAPSHOTS} with stats"
    rep.progress(case5)
    t5 = bl.measure(lists(), args.repeats, profilers=profilers(case5))
    run.record(case5, {k: bl.Timing(v.samples) for k, v in t5.items()})
    compare_lists(run, case5, t5[HERMES].results[-1], t5[REWIND].results[-1])

    # -- 4. checkpoint while at max_snapshots (Hermes prunes + gc on each) --------------
    case = f"4. checkpoint at max_snapshots={MAX_SNAPSHOTS} (Hermes prunes)"
    rep.progress(case)
    t = bl.measure(both("at the cap"), args.slow_repeats,
                   setup=lambda _i: bl.touch_one_file(project, next(edits)),
                   profilers=profilers(case))
    run.expect(case, t, True)
    run.record(case, t)
    run.rows.append(Row(case, t[HERMES].median, t[REWIND].median, ">= 20x", min_ratio=20))
    run.rows.append(Row(case5 + " (first one included)", t5[HERMES].median, t5[REWIND].median,
                        ">= 5x", min_ratio=5))
    same_tree(run, case, hermes, rewind, wd)
    kept = {tool.name: bl.store_tip(tool.base, wd).count for tool in (hermes, rewind)}
    for name, count in kept.items():
        if count != MAX_SNAPSHOTS:
            run.problems.append(
                f"{case}: {name} keeps {count} checkpoints after {args.slow_repeats} more "
                f"(max_snapshots={MAX_SNAPSHOTS}), so the two tools did different work")

    # -- 5b/5c. list again, now that both have pruned -----------------------------------
    case = "5b. same, after pruning (long-lived manager)"
    rep.progress(case)
    t = bl.measure(lists(), args.repeats, profilers=profilers(case))
    run.record(case, {k: bl.Timing(v.samples) for k, v in t.items()})
    compare_lists(run, case, t[HERMES].results[-1], t[REWIND].results[-1])
    run.rows.append(Row(case, t[HERMES].median, t[REWIND].median, ">= 5x", min_ratio=5))

    # A fresh manager per call, as a `rewind list` process has (Hermes keeps no state).
    case = "5c. same, after pruning (fresh manager per call)"
    rep.progress(case)
    t = bl.measure(
        {HERMES: lambda: HermesTool(hcm, hermes.base).list(wd),
         REWIND: lambda: RewindTool(rewindfs, rewind.base).list(wd)},
        args.repeats, profilers=profilers(case))
    run.record(case, {k: bl.Timing(v.samples) for k, v in t.items()})
    compare_lists(run, case, t[HERMES].results[-1], t[REWIND].results[-1])
    run.rows.append(Row(case, t[HERMES].median, t[REWIND].median, ">= 5x", min_ratio=5))

    # -- 6. 200,000 small files (rewindfs only) -----------------------------------------
    big = None
    if args.big:
        n = 200_000 // scale
        rep.progress(f"generating {n:,} small files")
        big = bl.generate_many_small(tmp / "big", files=n)
        rep.progress(f"6. {n:,} files: first checkpoint")
        tools.clear()

        def fresh_big(_i: int) -> None:
            if REWIND in tools:
                shutil.rmtree(tools[REWIND].base, ignore_errors=True)
            tools[REWIND] = RewindTool(rewindfs, fresh("rewind-big"), max_files=250_000)

        case = f"6a. {n:,} small files: first checkpoint"
        t = bl.measure({REWIND: lambda: tools[REWIND].checkpoint(big.root, "first")},
                       args.big_repeats, setup=fresh_big, profilers=profilers(case))
        run.expect(case, t, True)
        run.record(case, t)
        run.rows.append(Row(case, None, t[REWIND].median, "< 20 s", max_seconds=20.0,
                            hermes_note="n/a (refuses > 50k files)"))
        case = f"6b. {n:,} small files: no-change checkpoint"
        rep.progress(case)
        t = bl.measure({REWIND: lambda: tools[REWIND].checkpoint(big.root, "no change")},
                       args.repeats, profilers=profilers(case))
        run.expect(case, t, False)
        run.record(case, t)
        run.rows.append(Row(case, None, t[REWIND].median, "< 1 s", max_seconds=1.0,
                            hermes_note="n/a (refuses > 50k files)"))
        if n > 50_000:
            # Confirm the n/a: Hermes really declines this project.
            h = HermesTool(hcm, fresh("hermes-big"))
            elapsed, taken = bl.time_call(lambda: h.checkpoint(big.root, "first"))
            run.notes.append(f"Hermes on the {n:,}-file project: ensure_checkpoint returned "
                             f"{taken} after {bl.fmt_seconds(elapsed)} (its 50,000-file guard)")
            if taken:
                run.problems.append("case 6: Hermes checkpointed a project over its limit")
    if args.big:
        bench_44k(args, scale, tmp, hcm, rewindfs, run, rep, fresh, profilers)
    rep.progress("done")
    return project, big


def bench_44k(args, scale: int, tmp: Path, hcm, rewindfs, run: Run, rep: bl.Reporter,
              fresh, profilers) -> None:
    """Case 7: a first checkpoint of a 44,000-file, 176 MB tree, both tools."""
    n, size = 44_000 // scale, 176 * bl.MiB // scale
    rep.progress(f"generating {n:,} files, {size // bl.MiB} MiB")
    project = bl.generate_project(tmp / "p44k", files=n, total_bytes=size,
                                  node_modules_files=0, binary_bytes=0, seed=args.seed + 7)
    wd = project.root
    tools: dict[str, HermesTool | RewindTool] = {}

    def new_stores(_i: int) -> None:
        for old in list(tools.values()):
            shutil.rmtree(old.base, ignore_errors=True)
        tools[HERMES] = HermesTool(hcm, fresh("hermes-44k"))
        tools[REWIND] = RewindTool(rewindfs, fresh("rewind-44k"))

    case = f"7. {n:,} files / {size // bl.MiB} MiB: first checkpoint"
    rep.progress(case)
    t = bl.measure({HERMES: lambda: tools[HERMES].checkpoint(wd, "first"),
                    REWIND: lambda: tools[REWIND].checkpoint(wd, "first")},
                   args.big_repeats, setup=new_stores, profilers=profilers(case))
    run.expect(case, t, True)
    run.record(case, t)
    run.rows.append(Row(case, t[HERMES].median, t[REWIND].median, "< 5 s", max_seconds=5.0))
    same_tree(run, case, tools[HERMES], tools[REWIND], wd)
    for tool in tools.values():
        shutil.rmtree(tool.base, ignore_errors=True)
    shutil.rmtree(wd, ignore_errors=True)


def objects_bytes(base: Path) -> int:
    """Bytes the store's objects take (loose files and packs)."""
    return sum(p.stat().st_size for p in (base / "store" / "objects").rglob("*") if p.is_file())


def same_tree(run: Run, case: str, hermes: HermesTool, rewind: RewindTool, wd: Path) -> None:
    """Both tools checkpointed the same state: their tips must hold the same tree."""
    a, b = bl.store_tip(hermes.base, wd), bl.store_tip(rewind.base, wd)
    if a.tree is None or b.tree is None:
        run.problems.append(f"{case}: missing checkpoint (Hermes {a.tree}, rewindfs {b.tree})")
        return
    diffs = bl.compare_trees(hermes.base, a.tree, rewind.base, b.tree)
    if diffs:
        run.problems.append(f"{case}: the tools' checkpoints differ (first = Hermes, "
                            f"second = rewindfs): " + "; ".join(diffs))


def compare_lists(run: Run, case: str, hermes: list[dict], rewind: list[dict]) -> None:
    if len(hermes) != MAX_SNAPSHOTS or len(rewind) != MAX_SNAPSHOTS:
        run.problems.append(f"{case}: listed Hermes {len(hermes)}, rewindfs {len(rewind)} "
                            f"(expected {MAX_SNAPSHOTS} each)")
    keys = ("reason", "files_changed", "insertions", "deletions")
    # Hermes reports zeros for a root checkpoint (no parent to diff); rewindfs diffs it
    # against the empty tree, by design. Compare the others.
    pairs = list(zip(hermes, rewind, strict=False))[: MAX_SNAPSHOTS - 1]
    mismatches = [(i + 1, {k: h.get(k) for k in keys}, {k: r.get(k) for k in keys})
                  for i, (h, r) in enumerate(pairs)
                  if any(h.get(k) != r.get(k) for k in keys)]
    if mismatches:
        n, h, r = mismatches[0]
        run.problems.append(f"{case}: {len(mismatches)} entries disagree; #{n}: Hermes {h}, "
                            f"rewindfs {r}")


def render(args, run: Run, project: bl.Project, big: bl.Project | None) -> str:
    out = ["## bench_take: rewindfs vs Hermes 0.19 — taking and listing checkpoints", ""]
    out.append(bl.markdown_table(
        ["case", HERMES, REWIND, "ratio (Hermes/rewindfs)", "target", "met?"],
        [row.cells() for row in run.rows]))
    out.append("")
    mode = "quick (1/5 sizes)" if args.quick else "full"
    out.append(f"Medians of {args.slow_repeats} runs (cases 1, 4), {args.repeats} (2, 3, 5-5c, "
               f"6b), {args.big_repeats} (6a, 7); mode: {mode}; seed {args.seed}.")
    out.append(f"Project: {project.describe()}.")
    if big is not None:
        out.append(f"Case 6 project: {big.describe()}; rewindfs max_files=250_000.")
    if run.store_sizes:
        h, r = run.store_sizes.get(HERMES, 0), run.store_sizes.get(REWIND, 0)
        out.append(f"Store objects after case 1: {HERMES} {h / bl.MiB:.1f} MiB (loose), "
                   f"{REWIND} {r / bl.MiB:.1f} MiB (packs), {r / max(h, 1):.2f}x "
                   "(target <= 1.3x).")
    if args.profile:
        out.append("(--profile: rewindfs timings include cProfile overhead.)")
    out.append("")
    out.append("Machine:")
    out.extend(f"- {k}: {v}" for k, v in bl.machine_info())
    out.append("")
    out.append("Samples:")
    out.extend(f"- {d}" for d in run.details)
    missed = [row.case for row in run.rows if row.missed]
    if missed:
        out.append("")
        out.append("Missed targets: " + "; ".join(missed))
    if run.notes:
        out.append("")
        out.append("Notes:")
        out.extend(f"- {n}" for n in run.notes)
    if run.problems:
        out.append("")
        out.append("PROBLEMS (a tool misbehaved; timings of the affected cases may not compare "
                   "like with like):")
        out.extend(f"- {p}" for p in run.problems)
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
