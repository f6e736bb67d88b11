"""Benchmark: costs as the store grows (issue 23's growth table).

Builds stores directly (scripts/scalestore.py: `git fast-import`, seconds instead of an
hour of captures): one project with 100 checkpoints, one with 2,000, 300 projects of 3,
and a big store of 1,000 projects and 20,000 checkpoints (one of them with 2,000). Each
command is timed as its work beyond start-up (scripts/scaletiming.py: a fresh process
per sample, imports done before the clock starts; issue 21 owns the start-up), min and
median of --repeats samples. Growth = large / small, from the mins and from the medians.

A person's plain `rewind list` is also timed as a whole process, spawned in the project
with its stdout piped to `head -n 60`, from spawn to exit (start-up included; bytecode
cached, as installed).

Every store is read once before the timed samples (the first read builds the history
records, timed separately: "first read"). "after a checkpoint" cases take one
checkpoint in the 2,000 project first, so the records have one commit to add.

Benchmarks are not tests: nothing here fails on a missed target.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import scalestore  # noqa: E402

TIMING = Path(__file__).resolve().parent / "scaletiming.py"
LOG_FILE = "src/mod_000.py"  # changed by every 7th checkpoint (scalestore.changed_file)


@dataclass
class Row:
    case: str
    small: list[float] = field(default_factory=list)
    large: list[float] = field(default_factory=list)
    target: str = ""
    check: str = ""  # "growth" (<= 1.2x) or "ms:N" (large median <= N ms)


def sample(mode: str, home: Path, *args: str) -> float:
    """Seconds of one timed run in a fresh process (see scaletiming)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    env["HERMES_HOME"] = str(home)
    out = subprocess.run([sys.executable, str(TIMING), mode, str(home), "--", *args],
                         env=env, capture_output=True, text=True, timeout=600, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def samples(n: int, mode: str, home: Path, *args: str) -> list[float]:
    return [sample(mode, home, *args) for _ in range(n)]


def quick_sample(home: Path, workdir: Path) -> float:
    """Seconds of one whole `rewind list | head -n 60` process run in `workdir`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "REWIND_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env["HERMES_HOME"] = str(home)
    rewind = Path(sys.executable).parent / "rewind"
    head = subprocess.Popen(["head", "-n", "60"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    assert head.stdin is not None
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(rewind), "list"], cwd=workdir, env=env, stdout=head.stdin,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    head.stdin.close()
    proc.wait(timeout=600)
    elapsed = time.perf_counter() - t0
    head.wait(timeout=60)
    return elapsed


def stat(values: list[float]) -> str:
    if not values:
        return ""
    return f"{bl.fmt_seconds(min(values))} / {bl.fmt_seconds(statistics.median(values))}"


def growth(row: Row) -> tuple[str, float | None]:
    if not row.small or not row.large:
        return "", None
    by_min = min(row.large) / min(row.small)
    by_median = statistics.median(row.large) / statistics.median(row.small)
    return f"{by_min:.2f}x / {by_median:.2f}x", by_median


def met(row: Row) -> str:
    ratio = growth(row)[1]
    if row.check == "growth" and ratio is not None:
        return "yes" if ratio <= 1.2 else "no"
    if row.check.startswith("ms:") and row.large:
        return "yes" if statistics.median(row.large) * 1000 <= float(row.check[3:]) else "no"
    return ""


def render(rows: list[Row], big: list[Row], first: list[tuple[str, list[float]]],
           load: str) -> str:
    out = ["# bench_scale", "", f"Load at the start: {load}. Times: work beyond start-up, "
           "min / median.", "",
           bl.markdown_table(("case", "small", "large", "growth (min / median)", "target", "met"),
                             [(r.case, stat(r.small), stat(r.large), growth(r)[0], r.target,
                               met(r)) for r in rows])]
    if big:
        out += ["", "Store of 1,000 projects and 20,000 checkpoints (the project of 2,000 in it):",
                "", bl.markdown_table(("case", "time (min / median)", "target", "met"),
                                      [(r.case, stat(r.large), r.target, met(r)) for r in big])]
    if first:
        out += ["", "First read of a store without records (they are built), one sample:", "",
                bl.markdown_table(("case", "time"), [(c, stat(v)) for c, v in first])]
    out += ["", "Machine:", "", *(f"- {k}: {v}" for k, v in bl.machine_info())]
    return "\n".join(out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, metavar="N", help="samples per case (5)")
    p.add_argument("--no-big", action="store_true", help="skip the 1,000-project store")
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    p.add_argument("--tmp", type=Path, metavar="DIR", help="parent for the tmp dir")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir (and its stores)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rep = bl.Reporter()
    # Compiled first: modules imported only on a real store (after the warm-up run) would
    # otherwise be compiled inside the timed work of every sample where bytecode is not
    # written (PYTHONDONTWRITEBYTECODE), as an installed package never is.
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "rewindfs", quiet=1)
    load = Path("/proc/loadavg").read_text().split()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench_scale.", dir=args.tmp)).resolve()
    try:
        rows, big, first = run(args, tmp, rep)
    finally:
        if args.keep:
            rep.progress(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report = render(rows, big, first, load)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    return 0


def quick_row(n: int, small: scalestore.Built, large: scalestore.Built,
              rep: bl.Reporter) -> Row:
    case = "`rewind list \\| head -n 60`, whole process"
    rep.progress(case)
    row = Row(case, target="first screen flat", check="growth")
    for built in (small, large):
        quick_sample(built.home, built.workdirs[0])  # bytecode written, caches warm
    for _ in range(n):  # alternating, so load moves both alike
        row.small.append(quick_sample(small.home, small.workdirs[0]))
        row.large.append(quick_sample(large.home, large.workdirs[0]))
    return row


def build(tmp: Path, name: str, counts: list[int], rep: bl.Reporter) -> scalestore.Built:
    rep.progress(f"building {name}: {len(counts):,} projects, {sum(counts):,} checkpoints")
    return scalestore.build(tmp / name / "home", counts, materialize=1)


def run(args, tmp: Path, rep: bl.Reporter
        ) -> tuple[list[Row], list[Row], list[tuple[str, list[float]]]]:
    n = args.repeats
    small, large = build(tmp, "s100", [100], rep), build(tmp, "s2000", [2000], rep)
    many = build(tmp, "p300", [3] * 300, rep)
    first: list[tuple[str, list[float]]] = []
    for name, built in (("one project, 2,000 checkpoints", large),
                        ("300 projects x 3", many)):
        w = str(built.workdirs[0])
        first.append((f"`rewind list`, {name}", [sample("file", built.home, "list", "-C", w)]))
    first.append(("`rewind status`, 300 projects x 3", [sample("file", many.home, "status")]))
    sample("file", small.home, "list", "-C", str(small.workdirs[0]))
    sample("file", small.home, "status")
    sample("file", large.home, "status")

    def pair(case: str, mode: str, *cmd: str, target: str = "", check: str = "") -> Row:
        rep.progress(case)
        row = Row(case, target=target, check=check)
        for built, into in ((small, row.small), (large, row.large)):
            extra = ["-C", str(built.workdirs[0])] if cmd[0] in ("list", "log") else []
            into += samples(n, mode, built.home, *cmd, *extra)
        return row

    rows = [
        Row("one checkpoint (in process), history of 100 vs 2,000", target="flat",
            check="growth",
            small=samples(n, "take", small.home, str(small.workdirs[0])),
            large=samples(n, "take", large.home, str(large.workdirs[0]))),
        pair("`rewind list`, whole output", "file", "list"),
        pair("`rewind list \\| head -n 60`", "head", "list", target="first screen flat",
             check="growth"),
        pair("`rewind list` in a pager, first screen read", "pager", "list",
             target="first screen flat", check="growth"),
        quick_row(n, small, large, rep),
        pair("`rewind log FILE`", "file", "log", LOG_FILE, target="<= 200 ms", check="ms:200"),
        pair("`rewind status`", "file", "status", target="flat", check="growth"),
    ]
    sample("take", large.home, str(large.workdirs[0]))
    rows.append(Row("`rewind status` after a checkpoint", large=samples(n, "file", large.home,
                                                                      "status")))
    rows.append(Row("`rewind status`, 300 projects x 3", large=samples(n, "file", many.home,
                                                                     "status"),
                    target="<= 300 ms", check="ms:300"))
    rows.append(Row("`rewind list --all-projects`, 300 projects x 3",
                    large=samples(n, "file", many.home, "list", "--all-projects"),
                    target="<= 500 ms", check="ms:500"))
    big_rows = [] if args.no_big else big_cases(tmp, n, rep, first)
    return rows, big_rows, first


def big_cases(tmp: Path, n: int, rep: bl.Reporter, first: list[tuple[str, list[float]]]
              ) -> list[Row]:
    counts = [2000] + [18] * 999
    for i in range(18):
        counts[1 + i] += 1
    built = build(tmp, "big", counts, rep)
    home, w = built.home, str(built.workdirs[0])
    first.append(("`rewind status`, 1,000 projects / 20,000 checkpoints",
                  [sample("file", home, "status")]))
    first.append(("`rewind list --all-projects`, 1,000 projects / 20,000 checkpoints",
                  [sample("file", home, "list", "--all-projects")]))
    rep.progress("big store")
    return [
        Row("one checkpoint (in process)", large=samples(n, "take", home, w)),
        Row("`rewind list \\| head -n 60`", large=samples(n, "head", home, "list", "-C", w)),
        Row("`rewind log FILE`", large=samples(n, "file", home, "log", LOG_FILE, "-C", w),
            target="<= 200 ms", check="ms:200"),
        Row("`rewind status`", large=samples(n, "file", home, "status"), target="<= 300 ms",
            check="ms:300"),
        Row("`rewind list --all-projects \\| head -n 60`",
            large=samples(n, "head", home, "list", "--all-projects"), target="<= 500 ms",
            check="ms:500"),
        Row("`rewind list --all-projects`, whole output",
            large=samples(n, "file", home, "list", "--all-projects")),
    ]


if __name__ == "__main__":
    sys.exit(main())
