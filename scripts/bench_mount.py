"""Benchmark: browsing checkpoints through `rewind mount` vs a native copy of the same files
(and `restic mount` / `borg mount`), side by side in one run.

The generated 5,000-file project is checkpointed, ~1% of its files are edited and it
is checkpointed again. The newer checkpoint is copied natively (`cp -a` from the
mount, so both hold exactly the same files) and so is the older one. Cold runs
remount every FUSE tool (a fresh process, empty caches) and drop the kernel's
caches (`sync; echo 3 > /proc/sys/vm/drop_caches`, root only) first.

Subjects: native; rewindfs (kernel caching, the patched pyfuse3); rewindfs-stock
(`--no-kernel-cache`: the requests stock pyfuse3 makes); restic 0.14+ and borg 1.2+
(installed with apt-get when missing and run as root; otherwise the command is printed).

Cases and targets (times are medians; ratio = rewindfs / native):
  warm find, find -ls, read-all (tar | cat), grep -r,
  diff -r checkpoint vs work tree           <= 1.2x native
  diff -r between two checkpoints           <= 0.5x native
  cold read-all, cold diff -r vs work tree  faster than restic and borg

A benchmark, not a test: a missed target does not change the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REWIND = [sys.executable, "-m", "rewindfs.cli"]
QUIET_ENV = {"RESTIC_PASSWORD": "bench", "BORG_PASSPHRASE": "",
             "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes"}


@dataclass
class Subject:
    """One way of looking at the two snapshots: where they are, how to restart it cold."""

    name: str
    new: Path
    old: Path | None
    restart: Callable[[], None] = lambda: None
    stop: Callable[[], None] = lambda: None


@dataclass
class Case:
    name: str
    command: str  # {new} {old} {work} are filled in
    target: str
    cold: bool = False
    needs_old: bool = False


WARM = "<= 1.2x native"
BETWEEN = "<= 0.5x native"
COLD = "faster than restic and borg"
LIMITS = {WARM: 1.2, BETWEEN: 0.5}

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


def ensure_tools(rep: bl.Reporter) -> None:
    """restic and borg for the comparison: installed with apt-get when missing (as root)."""
    missing = [pkg for tool, pkg in (("restic", "restic"), ("borg", "borgbackup"))
               if shutil.which(tool) is None]
    if not missing:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if os.getuid() != 0 or shutil.which("apt-get") is None:
        rep.progress(f"restic/borg missing; for the comparison run: sudo {' '.join(command)}")
        return
    rep.progress(f"installing {' '.join(missing)} for the comparison")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(command, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        subprocess.run(command, env=env, capture_output=True)


def sh(command: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> None:
    proc = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True)
    if proc.returncode not in ok:
        raise RuntimeError(f"{command!r} exited {proc.returncode}: {proc.stderr.strip()}")


def wait_mounted(path: Path, proc: subprocess.Popen | None = None, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.ismount(path):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"mount at {path} exited {proc.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{path} not mounted after {timeout} s")


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


# -- subjects ------------------------------------------------------------------------------


def rewind_subject(home: Path, mnt: Path, project: str, name: str = "rewindfs",
                   *flags: str) -> Subject:
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(ROOT)}

    def start() -> None:
        subprocess.run([*REWIND, "mount", str(mnt), *flags], env=env, check=True,
                       capture_output=True)

    def stop() -> None:
        subprocess.run([*REWIND, "umount", str(mnt)], env=env, capture_output=True)

    start()
    folder = mnt / project
    new, old = folder / os.readlink(folder / "1"), folder / os.readlink(folder / "2")

    def restart() -> None:
        stop()
        start()

    return Subject(name, new, old, restart, stop)


def restic_subject(tmp: Path, new_src: Path, old_src: Path) -> Subject | None:
    if shutil.which("restic") is None:
        return None
    env = {**os.environ, **QUIET_ENV, "RESTIC_REPOSITORY": str(tmp / "restic-repo"),
           "RESTIC_CACHE_DIR": str(tmp / "restic-cache")}
    sh("restic init -q", env)
    for src in (old_src, new_src):
        sh(f"restic backup -q {src}", env)
    snaps = json.loads(subprocess.run(["restic", "snapshots", "--json"], env=env,
                                      capture_output=True, check=True).stdout)
    ids = {Path(s["paths"][0]): s["short_id"] for s in snaps}
    mnt = tmp / "restic-mnt"
    mnt.mkdir()
    procs: list[subprocess.Popen] = []

    def start() -> None:
        procs.append(subprocess.Popen(["restic", "mount", str(mnt)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_mounted(mnt, procs[-1])

    def stop() -> None:
        while procs:
            proc = procs.pop()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)

    def snapshot(src: Path) -> Path:
        return mnt / "ids" / ids[src] / str(src).lstrip("/")

    start()
    return Subject("restic", snapshot(new_src), snapshot(old_src),
                   lambda: (stop(), start()), stop)


def borg_subject(tmp: Path, new_src: Path, old_src: Path) -> Subject | None:
    if shutil.which("borg") is None:
        return None
    repo = tmp / "borg-repo"
    env = {**os.environ, **QUIET_ENV, "BORG_BASE_DIR": str(tmp / "borg-base")}
    sh(f"borg init -e none {repo}", env)
    for name, src in (("old", old_src), ("new", new_src)):
        sh(f"borg create {repo}::{name} {src}", env)
    mnt = tmp / "borg-mnt"
    mnt.mkdir()

    def start() -> None:
        subprocess.run(["borg", "mount", str(repo), str(mnt)], env=env, check=True)
        wait_mounted(mnt)

    def stop() -> None:
        subprocess.run(["borg", "umount", str(mnt)], env=env, capture_output=True)

    start()
    return Subject("borg", mnt / "new" / str(new_src).lstrip("/"),
                   mnt / "old" / str(old_src).lstrip("/"), lambda: (stop(), start()), stop)


# -- running -------------------------------------------------------------------------------


def run_case(case: Case, subjects: list[Subject], work: Path, repeats: int,
             rep: bl.Reporter) -> dict[str, bl.Timing]:
    usable = [s for s in subjects if s.old is not None or not case.needs_old]

    def command(s: Subject) -> Callable[[], None]:
        text = case.command.format(new=s.new, old=s.old, work=work)
        return lambda: sh(text, ok=(0, 1))

    fns = {s.name: command(s) for s in usable}
    if case.cold:
        def setup(_: int) -> None:
            for s in usable:
                s.restart()
            drop_caches()
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


def report(results: dict[str, dict[str, bl.Timing]], names: list[str]) -> str:
    extra = [n for n in names if n not in ("native", "rewindfs")]
    header = ["case", "native", "rewindfs (min / median)", "ratio", "target", "met",
              *[f"{n} (ratio)" for n in extra]]
    rows = []
    for case in CASES:
        timing = results[case.name]
        med = {n: timing[n].median if n in timing else None for n in names}
        ratio_text, ratio = ratio_of(med["rewindfs"], med["native"])
        if case.cold:
            others = [med[n] for n in ("restic", "borg") if med.get(n) is not None]
            met = "n/a (no restic/borg)" if not others else \
                ("yes" if all(med["rewindfs"] < o for o in others) else "no")
        else:
            met = "n/a" if ratio is None else ("yes" if ratio <= LIMITS[case.target] else "no")
        cells = []
        for n in extra:
            if n not in timing:
                cells.append("not installed")
                continue
            cells.append(f"{bl.fmt_seconds(med[n])} ({ratio_of(med[n], med['native'])[0]})")
        ours = timing["rewindfs"]
        rows.append([case.name, bl.fmt_seconds(med["native"]),
                     f"{bl.fmt_seconds(min(ours.samples))} / {bl.fmt_seconds(ours.median)}",
                     ratio_text, case.target, met, *cells])
    return bl.markdown_table(header, rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=5_000, help="files in the project (5000)")
    p.add_argument("--repeats", type=int, default=5, metavar="N", help="warm repeats (5)")
    p.add_argument("--cold-repeats", type=int, default=3, metavar="N", help="cold repeats (3)")
    p.add_argument("--no-others", action="store_true", help="skip restic and borg")
    p.add_argument("--packed", action="store_true",
                   help="repack the store first into one pack (git repack -ad, as "
                        "maintenance's gc leaves it) instead of the packs and few loose "
                        "objects the checkpoints wrote")
    p.add_argument("--no-stock", action="store_true",
                   help="skip the --no-kernel-cache (stock pyfuse3 requests) subject")
    p.add_argument("--tmp", type=Path, help="work here instead of a new tmp dir")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir (path printed)")
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    return p.parse_args(argv)


def prepare(tmp: Path, files: int, rep: bl.Reporter) -> tuple[Path, Path, str]:
    """The project with two checkpoints (the second after ~1% of files changed)."""
    from rewindfs.store import Layout, Store, take

    work, home = tmp / "work", tmp / "home"
    project = bl.generate_project(work, files=files)
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
        if not args.no_others:
            ensure_tools(rep)
        for make, tool in ((restic_subject, "restic"), (borg_subject, "borg")):
            names.append(tool)
            made = None if args.no_others else make(tmp, native_new, native_old)
            rep.progress(f"{tool}: {'mounted' if made else 'not installed (or skipped)'}")
            if made:
                subjects.append(made)
        cold_note = "" if drop_caches() else " (could not drop caches: not root?)"
        results = {c.name: run_case(c, subjects, work, args.cold_repeats if c.cold
                                    else args.repeats, rep) for c in CASES}
        lines = ["## rewind mount benchmark", "",
                 f"{args.files:,} files ({'repacked into one pack' if args.packed else 'as the checkpoints wrote it'});"
                 f" warm x{args.repeats}, cold x{args.cold_repeats}"
                 f"{cold_note}; medians", "", report(results, names), "",
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
