"""Benchmark: what durability costs, the same code with its fsyncs and without.

rewindfs follows git's `core.fsync=committed` discipline (docs/architecture.md,
durability). This times the operations that pay for it, in processes that alternate:
one as shipped, one with every fsync, syncfs and libgit2's gitdir fsync turned off
(only here: the product has no such switch). Each process builds its own copy of one
generated project, takes a target checkpoint and ten one-file changes, then times

  one-file-change checkpoint     the file edited untimed before each
  no-change checkpoint
  single-file restore            of one of the ten changed files
  full restore, 10 changes back  the ten files edited untimed before each

A benchmark, not a test: it reports min and median of every sample of each mode and
their ratio (with / without), never a verdict. Usage:

  .venv/bin/python scripts/bench_durability.py [--rounds N] [--repeats N] [--files N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

CASES = ("one-file-change checkpoint", "no-change checkpoint", "single-file restore",
         "full restore, 10 changes back")
CHANGES = 10


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-durability-"))
    samples: dict[str, dict[str, list[float]]] = {m: {c: [] for c in CASES}
                                                  for m in ("with", "without")}
    try:
        source = bl.generate_project(tmp / "source", files=args.files,
                                     total_bytes=args.files * 10_000, seed=1)
        (tmp / "files.txt").write_text("\n".join(map(str, source.files)))
        for round_ in range(args.rounds):
            modes = ("with", "without") if round_ % 2 == 0 else ("without", "with")
            for mode in modes:
                print(f"round {round_ + 1}/{args.rounds}: {mode} fsync", file=sys.stderr)
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", mode, "--repeats", str(args.repeats),
                     "--source", str(tmp / "source"), "--work", str(tmp / f"{mode}-{round_}")],
                    capture_output=True, text=True, check=True)
                for case, times in json.loads(proc.stdout).items():
                    samples[mode][case].extend(times)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    for case in CASES:
        w, wo = samples["with"][case], samples["without"][case]
        rows.append([case, f"{bl.fmt_seconds(min(w))} / {bl.fmt_seconds(statistics.median(w))}",
                     f"{bl.fmt_seconds(min(wo))} / {bl.fmt_seconds(statistics.median(wo))}",
                     f"{statistics.median(w) / statistics.median(wo):.2f}x"])
    print("## bench_durability\n")
    print(bl.markdown_table(["item", "value"], bl.machine_info()))
    print(f"\n{args.files} files; {args.rounds} processes per mode x {args.repeats} repeats; "
          "min / median\n")
    print(bl.markdown_table(["case", "with fsync", "without", "median ratio"], rows))
    return 0


def child(args: argparse.Namespace) -> dict[str, list[float]]:
    if args.child == "without":
        _no_fsync()
    import rewindfs

    work = Path(args.work)
    project = work / "project"
    shutil.copytree(args.source, project, symlinks=True)
    files = [Path(line) for line in (Path(args.source).parent / "files.txt").read_text()
             .splitlines()]
    changed = [files[(i * 7919) % len(files)] for i in range(CHANGES)]
    mgr = rewindfs.CheckpointManager(enabled=True, max_snapshots=500, base=work / "base")

    def edit(rel: Path, text: str) -> None:
        with open(project / rel, "a") as fh:
            fh.write(text)

    def take(reason: str) -> None:
        mgr.new_turn()
        mgr.ensure_checkpoint(str(project), reason)

    take("target")
    target = mgr.list_checkpoints(str(project))[0]["hash"]
    for i, rel in enumerate(changed):
        edit(rel, f"// change {i}\n")
        take(f"change {i}")
    out: dict[str, list[float]] = {c: [] for c in CASES}
    for i in range(args.repeats):
        edit(changed[0], f"// repeat {i}\n")
        out[CASES[0]].append(bl.time_call(lambda: take("one file"))[0])
        out[CASES[1]].append(bl.time_call(lambda: take("no change"))[0])
        restore_one = lambda: mgr.restore(str(project), target, changed[0].as_posix())  # noqa: E731
        out[CASES[2]].append(bl.time_call(restore_one)[0])
        for rel in changed:
            edit(rel, f"// repeat {i}\n")
        out[CASES[3]].append(bl.time_call(lambda: mgr.restore(str(project), target))[0])
    return out


def _no_fsync() -> None:
    """Every fsync rewindfs makes, its syncfs and libgit2's gitdir fsync: off."""
    from rewindfs.store.objects import durable

    os.fsync = lambda fd: None
    durable.syncfs = lambda fd: None
    durable._libgit2_done = True  # never turns libgit2's fsync on


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=4, metavar="N",
                   help="processes per mode, alternating (default 4)")
    p.add_argument("--repeats", type=int, default=7, metavar="N",
                   help="timed repeats of each case per process (default 7)")
    p.add_argument("--files", type=int, default=2000, metavar="N",
                   help="files in the project (default 2000)")
    p.add_argument("--child", choices=("with", "without"), help=argparse.SUPPRESS)
    p.add_argument("--source", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
