"""Benchmark: browsing checkpoints through `rewind mount` vs a native copy of the same files
(and `restic mount` / `borg mount`), side by side in one run.

The generated 5,000-file project is checkpointed, ~1% of its files are edited and it
is checkpointed again. The newer checkpoint is copied natively (`cp -a` from the
mount, so both hold exactly the same files) and so is the older one. Cold runs
remount every FUSE tool (a fresh process, empty caches) and drop the kernel's
caches (`sync; echo 3 > /proc/sys/vm/drop_caches`, root only) first.

Subjects: native; rewindfs (kernel caching, the patched pyfuse3); rewindfs-stock
(`--no-kernel-cache`: the requests stock pyfuse3 makes); rewindfs-kilo (the same two
states as steps of a Kilo Code session, read through Kilo's snapshots: target, the same
times as rewindfs's); restic 0.14+ and borg 1.2+
(installed with apt-get when missing and run as root, borg with the FUSE binding its
mount needs; otherwise the command is printed). One that cannot mount here is left out
of the run and the reason printed under the table (see bench_mount_subjects).

Cases and targets (times are medians; ratio = rewindfs / native):
  warm find, find -ls, read-all (tar | cat), grep -r,
  diff -r checkpoint vs work tree           <= 1.2x native
  diff -r between two checkpoints           <= 0.5x native
  cold read-all, cold diff -r vs work tree  <= 1.5x native (issue 23), and faster than
                                            restic and borg (when they take part)

A benchmark, not a test: a missed target does not change the exit status.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from bench_mount_agents import agent_subject  # noqa: E402
from bench_mount_subjects import (  # noqa: E402
    Subject,
    check_others,
    ensure_tools,
    other_subjects,
    rewind_subject,
    sh,
)

OTHERS = ("restic", "borg")
KILO = "rewindfs-kilo"


@dataclass
class Case:
    name: str
    command: str  # {new} {old} {work} are filled in
    target: str
    cold: bool = False
    needs_old: bool = False


WARM = "<= 1.2x native"
BETWEEN = "<= 0.5x native"
COLD = "<= 1.5x native, faster than restic and borg"
LIMITS = {WARM: 1.2, BETWEEN: 0.5, COLD: 1.5}

CASES = [
    Case("warm find", "find {new} > /dev/null", WARM),
    Case("warm find -ls", "find {new} -ls > /dev/null", WARM),
    Case("warm read-all", "tar cf - -C {new} . | cat > /dev/null", WARM),
    Case("warm grep -r", "grep -r -c zzzz-no-such-text {new} > /dev/null", WARM),
    Case("warm diff -r vs work tree", "diff -r {new} {work} > /dev/null", WARM),
    Case("diff -r between two checkpoints", "diff -r {old} {new} > /dev/null", BETWEEN,
         needs_old=True),
    Case("cold read-all", "tar cf - -C {new} . | cat > /dev/null", COLD, cold=True),
    Case("cold diff -r vs work tree", "diff -r {new} {work} > /dev/null", COLD, cold=True),
]


# -- running -------------------------------------------------------------------------------


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def run_case(case: Case, subjects: list[Subject], work: Path, repeats: int,
             rep: bl.Reporter, drop: Callable[[], bool]) -> dict[str, bl.Timing]:
    usable = [s for s in subjects if s.old is not None or not case.needs_old]

    def command(s: Subject) -> Callable[[], None]:
        text = case.command.format(new=s.new, old=s.old, work=work)
        return lambda: sh(text, ok=(0, 1))

    fns = {s.name: command(s) for s in usable}
    if case.cold:
        def setup(_: int) -> None:
            for s in usable:
                s.restart()
            drop()
    else:
        for fn in fns.values():  # warm up: page cache, dentries, the mount's caches
            fn()
        setup = None
    rep.progress(f"{case.name}: {', '.join(fns)} x{repeats}")
    return bl.measure(fns, repeats, setup=setup)


def ratio_of(ours: float | None, native: float | None) -> tuple[str, float | None]:
    """('0.42x', 0.42) for ours/native (two decimals: the targets are 1.2x and 0.5x)."""
    if ours is None or native is None or not native > 0 or ours != ours:
        return "n/a", None
    r = ours / native
    return f"{r:.2f}x", r


def report(results: dict[str, dict[str, bl.Timing]], names: list[str],
           left_out: dict[str, str]) -> str:
    extra = [n for n in names if n not in ("native", "rewindfs")]
    header = ["case", "native", "rewindfs (min / median)", "ratio", "target", "met",
              *[f"{n} (ratio)" for n in extra]]
    rows = []
    for case in CASES:
        timing = results[case.name]
        med = {n: timing[n].median if n in timing else None for n in names}
        ratio_text, ratio = ratio_of(med["rewindfs"], med["native"])
        met = "n/a" if ratio is None else ("yes" if ratio <= LIMITS[case.target] else "no")
        others = [med[n] for n in OTHERS if med.get(n) is not None]
        if case.cold and met == "yes" and not all(med["rewindfs"] < o for o in others):
            met = "no (restic or borg faster)"
        cells = []
        for n in extra:
            if n not in timing:
                cells.append("left out (below)" if n in left_out else "skipped")
                continue
            cells.append(f"{bl.fmt_seconds(med[n])} ({ratio_of(med[n], med['native'])[0]})")
        ours = timing["rewindfs"]
        rows.append([case.name, bl.fmt_seconds(med["native"]),
                     f"{bl.fmt_seconds(min(ours.samples))} / {bl.fmt_seconds(ours.median)}",
                     ratio_text, case.target, met, *cells])
    notes = [f"{tool} left out: {why}" for tool, why in left_out.items()]
    kilo = [f"{case.name} {ratio_of(timing[KILO].median, timing['rewindfs'].median)[0]}"
            for case in CASES if KILO in (timing := results[case.name])]
    if kilo:  # its target: as fast as our checkpoints
        notes.append(f"{KILO} / rewindfs (medians): {', '.join(kilo)}")
    return "\n".join([bl.markdown_table(header, rows), *([""] + notes if notes else [])])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=5_000,
                   help="files in the project (5000; its bytes and node_modules scale "
                        "with it: 50 MiB and 2,000 at 5000)")
    p.add_argument("--repeats", type=int, default=5, metavar="N", help="warm repeats (5)")
    p.add_argument("--cold-repeats", type=int, default=3, metavar="N", help="cold repeats (3)")
    p.add_argument("--no-others", action="store_true", help="skip restic and borg")
    p.add_argument("--no-install", action="store_true",
                   help="use restic and borg as installed; install nothing")
    p.add_argument("--no-drop-caches", action="store_true",
                   help="cold cases only remount, leaving the kernel's caches alone")
    p.add_argument("--check-others", action="store_true",
                   help="only say whether restic and borg can mount here (and why not); "
                        "installs nothing")
    p.add_argument("--packed", action="store_true",
                   help="repack the store first into one pack (git repack -ad, as "
                        "maintenance's gc leaves it) instead of the packs and few loose "
                        "objects the checkpoints wrote; and Kilo's snapshots as its gc "
                        "leaves them")
    p.add_argument("--no-stock", action="store_true",
                   help="skip the --no-kernel-cache (stock pyfuse3 requests) subject")
    p.add_argument("--no-agents", action="store_true",
                   help="skip the rewindfs-kilo subject (the same states as a Kilo Code "
                        "session's steps, in the mount)")
    p.add_argument("--tmp", type=Path, help="work here instead of a new tmp dir")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir (path printed)")
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    return p.parse_args(argv)


def prepare(tmp: Path, files: int, rep: bl.Reporter) -> tuple[Path, Path, str]:
    """The project with two checkpoints (the second after ~1% of files changed). Its
    bytes and node_modules files scale with `files` (a 40-file quick run wrote the full
    run's 50 MiB in 40 files and copied, backed up and read them all)."""
    from rewindfs.store import Layout, Store, take

    work, home = tmp / "work", tmp / "home"
    project = bl.generate_project(work, files=files, total_bytes=files * 50 * bl.MiB // 5_000,
                                  node_modules_files=files * 2 // 5)
    rep.progress(f"generated {project.describe()}")
    store = Store(Layout.for_home(home))
    take(store, work, "bench: before edits")
    for n in range(max(1, files // 100)):
        bl.touch_one_file(project, n)
    take(store, work, "bench: after edits")
    return work, home, work.name


def main(argv: list[str] | None = None) -> int:
    from rewindfs.store import Layout

    args = parse_args(argv)
    if args.check_others:
        for tool, problem in check_others().items():
            print(f"{tool}: {'can mount here' if problem is None else 'left out: ' + problem}")
        return 0
    rep = bl.Reporter()
    tmp = args.tmp or Path(tempfile.mkdtemp(prefix="bench-mount-"))
    tmp.mkdir(parents=True, exist_ok=True)
    subjects: list[Subject] = []
    try:
        work, home, name = prepare(tmp, args.files, rep)
        if args.packed:
            store = Layout.for_home(home).store
            subprocess.run(["git", "repack", "-adq"], env={**os.environ, "GIT_DIR": str(store)},
                           check=True)
            rep.progress("store repacked into one pack")
        ours = rewind_subject(home, tmp / "mnt", name)
        subjects.append(ours)
        native_new, native_old = tmp / "native-new", tmp / "native-old"
        sh(f"cp -a {ours.new}/ {native_new} && cp -a {ours.old}/ {native_old}")
        sh(f"diff -r --no-dereference {ours.new} {native_new}")  # same files, or no bench
        subjects.insert(0, Subject("native", native_new, native_old))
        names = ["native", "rewindfs"]
        if not args.no_stock:
            names.append("rewindfs-stock")
            subjects.append(rewind_subject(home, tmp / "mnt-stock", name, "rewindfs-stock",
                                           "--no-kernel-cache"))
        if not args.no_agents:
            names.append(KILO)
            subjects.append(agent_subject(tmp, home, native_new, native_old, args.packed))
            sh(f"diff -r --no-dereference {subjects[-1].new} {native_new}")  # the same files
        names += OTHERS
        left_out = {tool: "--no-others" for tool in OTHERS} if args.no_others else {}
        if not args.no_others:
            if not args.no_install:
                ensure_tools(rep.progress)
            others, left_out = other_subjects(tmp, native_new, native_old, rep.progress)
            subjects += others
        drop = (lambda: False) if args.no_drop_caches else drop_caches
        cold_note = "" if drop() else " (kernel caches not dropped: --no-drop-caches or " \
            "not root)"
        results = {c.name: run_case(c, subjects, work, args.cold_repeats if c.cold
                                    else args.repeats, rep, drop) for c in CASES}
        layout = "repacked into one pack" if args.packed else "as the checkpoints wrote it"
        lines = ["## rewind mount benchmark", "",
                 f"{args.files:,} files ({layout}); warm x{args.repeats}, "
                 f"cold x{args.cold_repeats}{cold_note}; medians", "",
                 report(results, names, left_out), "",
                 bl.markdown_table(["machine", ""], bl.machine_info())]
        text = "\n".join(lines)
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
    finally:
        for s in subjects:
            s.stop()
        if args.keep:
            rep.progress(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
