"""Soak: the store held to its size cap over 2,000 checkpoints of an agent's hook (issue 46).

An agent's hook (`python -I -m rewindfs.hooks claude-code`, what `rewind hooks install`
writes, with a Claude Code PreToolUse payload on stdin, as scripts/bench_hooks runs it)
checkpoints a project that rewrites --churn-mb MB of new, incompressible content before
each call, --checkpoints times, into a store capped at --cap-mb (max_total_size_mb;
max_snapshots --max-snapshots, so that the cap is what drops checkpoints). One
checkpoint early on is labelled. After every checkpoint the store's size is sampled: the
bytes of its objects (what the cap is held against) and every file under objects/.

At the end (once the last pruning is done): `git fsck --strict` on the store, and the
newest and the labelled checkpoints restored (`rewind restore REF --to DIR`) and compared
with what the project held when they were taken.

Latency: every --baseline-every iterations the same change is also checkpointed by the
same hook into a second Hermes home without a cap (max_total_size_mb 0, auto_prune off;
emptied every --baseline-reset of its checkpoints, the checkpoint after which is left
out), taken while no pruning runs. The capped store's checkpoints are split by whether a
pruning ran while they were taken. Wall time of the hook process, as an agent waits for
it. Not a test: it exits 1 only on misbehaviour (a checkpoint not taken, the store over
the cap plus one checkpoint, fsck or a restore failing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
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

from rewindfs.hooks import helper  # noqa: E402
from rewindfs.hooks.agents import hook_argv  # noqa: E402

CHURN_FILES = 20


@dataclass
class Sample:
    seconds: float
    pruning: bool  # a pruning held the store when the hook started or ended
    stored: int  # the store's objects after it (what the cap is held against)
    files: int  # every file under objects/ after it


@dataclass
class Run:
    capped: list[Sample] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    added: list[int] = field(default_factory=list)  # one checkpoint's bytes (no pruning near)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", type=int, default=2000, metavar="N",
                   help="checkpoints of the capped store (default 2000)")
    p.add_argument("--quick", action="store_true", help="100 checkpoints, a 200 MB cap")
    p.add_argument("--churn-mb", type=int, default=20, help="new content per checkpoint")
    p.add_argument("--cap-mb", type=int, default=500, help="max_total_size_mb (default 500)")
    p.add_argument("--max-snapshots", type=int, default=1000)
    p.add_argument("--baseline-every", type=int, default=5, metavar="K")
    p.add_argument("--baseline-reset", type=int, default=20, metavar="M")
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    p.add_argument("--tmp", type=Path, metavar="DIR", help="parent for the tmp dir")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir")
    args = p.parse_args(argv)
    if args.quick:
        args.checkpoints, args.cap_mb = min(args.checkpoints, 100), min(args.cap_mb, 200)
    return args


def payload(cwd: Path, n: int) -> bytes:
    return json.dumps({"session_id": "soak", "prompt_id": f"turn-{n}", "cwd": str(cwd),
                       "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "rm -rf build"},
                       "tool_use_id": f"t{n}"}).encode()


def churn(project: Path, n: int, size: int) -> str:
    """New content in churn/ (CHURN_FILES files, `size` bytes in all); its digest."""
    digest = hashlib.sha256()
    each = size // CHURN_FILES
    for i in range(CHURN_FILES):
        data = os.urandom(each)
        (project / "churn" / f"part{i:02d}.bin").write_bytes(data)
        digest.update(data)
    (project / "churn" / "step.txt").write_text(f"step {n}\n")
    return digest.hexdigest()


def churn_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for i in range(CHURN_FILES):
        digest.update((root / "churn" / f"part{i:02d}.bin").read_bytes())
    return digest.hexdigest()


class Home:
    """A Hermes home with its config, the hook's environment and its store's sizes."""

    def __init__(self, path: Path, config: str):
        from rewindfs.store.objects.layout import Layout

        self.path = path
        path.mkdir(parents=True)
        (path / "config.yaml").write_text(config)
        self.layout = Layout(path / "checkpoints")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(path.parent),
                    "HERMES_HOME": str(path), "LANG": "C.UTF-8"}

    def hook(self, project: Path, n: int) -> float:
        start = time.perf_counter()
        subprocess.run(hook_argv("claude-code"), input=payload(project, n), env=self.env,
                       cwd=project, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    def sizes(self) -> tuple[int, int]:
        from rewindfs.store.maintenance.objsizes import object_bytes

        return object_bytes(self.layout)

    def pruning(self) -> bool:
        from rewindfs.store.maintenance import auto

        return auto.running(self.layout)

    def rewind(self, *args: str) -> subprocess.CompletedProcess:
        rewind = shutil.which("rewind", path=os.path.dirname(sys.executable)) or "rewind"
        return subprocess.run([rewind, *args], env=self.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=600)

    def log(self) -> list[str]:
        path = self.path / "rewind-hooks" / "hook.log"
        return path.read_text().splitlines() if path.exists() else []


def wait_quiet(home: Home, timeout: float = 600) -> None:
    """Until no pruning holds the store, and none started by the last checkpoint is about
    to (a pruner takes the base lock once its imports are done)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not home.pruning() and not pruner_pids(home):
            return
        time.sleep(0.05)


def pruner_pids(home: Home) -> list[int]:
    base = str(home.layout.base).encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"rewindfs.store.maintenance.autocap" in argv and base in argv:
                found.append(int(entry.name))
    return found


def soak(args: argparse.Namespace, tmp: Path, run: Run, rep: bl.Reporter) -> dict:
    project = tmp / "project"
    base = bl.generate_project(project, files=500, total_bytes=5 * bl.MiB,
                               node_modules_files=0, binary_bytes=0)
    (project / "churn").mkdir()
    capped = Home(tmp / "capped", f"checkpoints:\n  max_total_size_mb: {args.cap_mb}\n"
                                  f"  max_snapshots: {args.max_snapshots}\n")
    baseline = Home(tmp / "baseline", "checkpoints:\n  max_total_size_mb: 0\n"
                                      f"  max_snapshots: {args.max_snapshots}\n"
                                      "  auto_prune: false\n")
    churn_bytes = args.churn_mb * bl.MiB
    label_at, labelled = min(10, args.checkpoints // 2), ""
    since_reset = 0
    last_stored = 0
    for n in range(1, args.checkpoints + 1):
        digest = churn(project, n, churn_bytes)
        if n % args.baseline_every == 0:
            wait_quiet(capped)
            seconds = baseline.hook(project, n)
            since_reset += 1
            if since_reset > 1:  # the first after a reset takes the whole tree
                run.baseline.append(seconds)
            if since_reset >= args.baseline_reset:
                helper.stop(baseline.path / "rewind-hooks")
                shutil.rmtree(baseline.layout.base)
                since_reset = 0
        before = capped.pruning()
        seconds = capped.hook(project, n)
        pruning = before or capped.pruning()
        stored, files = capped.sizes()
        run.capped.append(Sample(seconds, pruning, stored, files))
        if not pruning and last_stored and stored > last_stored:
            run.added.append(stored - last_stored)
        last_stored = stored
        if n == label_at:
            done = capped.rewind("label", "soak-label", "-C", str(project))
            if done.returncode != 0:
                run.problems.append(f"label failed: {done.stderr.strip()}")
            labelled = digest
        if n % 50 == 0 or n == args.checkpoints:
            rep.progress(f"{n} checkpoints: store {stored / bl.MiB:.0f} MiB "
                         f"(cap {args.cap_mb}), last {seconds * 1000:.0f} ms")
    wait_quiet(capped)
    return {"capped": capped, "baseline": baseline, "project": project, "base": base,
            "labelled": labelled, "newest": churn_digest(project)}


def check_end(args: argparse.Namespace, tmp: Path, state: dict, run: Run) -> dict:
    capped: Home = state["capped"]
    out: dict = {}
    taken = sum(" info checkpoint of " in line for line in capped.log())
    errors = [line for line in capped.log() if " error " in line]
    out["taken"] = taken
    if taken != args.checkpoints or errors:
        run.problems.append(f"{taken} of {args.checkpoints} checkpoints taken; "
                            f"{len(errors)} errors: {errors[:3]}")
    stored, files = capped.sizes()
    out["final"] = stored
    env = {**os.environ, "GIT_DIR": str(capped.layout.store), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull}
    fsck = subprocess.run(["git", "fsck", "--strict"], env=env, capture_output=True, text=True)
    out["fsck"] = fsck.returncode
    if fsck.returncode != 0:
        run.problems.append(f"git fsck --strict: {fsck.returncode}: {fsck.stderr[-500:]}")
    for ref, want, name in (("1", state["newest"], "newest"),
                            ("soak-label", state["labelled"], "labelled")):
        dest = tmp / f"restored-{name}"
        done = capped.rewind("restore", ref, "--to", str(dest), "-C", str(state["project"]))
        ok = done.returncode == 0 and churn_digest(dest) == want and \
            len([p for p in dest.rglob("*") if p.is_file()]) == \
            len([p for p in state["project"].rglob("*") if p.is_file()])
        out[name] = ok
        if not ok:
            run.problems.append(f"restoring the {name} checkpoint: {done.returncode} "
                                f"{done.stderr.strip()[-300:]}")
    listed = json.loads(capped.rewind("list", "--json", "-C", str(state["project"])).stdout)
    out["kept"] = len(listed)
    record = json.loads((capped.layout.store / "rewind-size-cap.json").read_text())
    out["record"] = record
    helper.stop(capped.path / "rewind-hooks")
    helper.stop(state["baseline"].path / "rewind-hooks")
    return out


def stats(values: list[float]) -> list[str]:
    if not values:
        return ["0", "n/a", "n/a", "n/a", "n/a"]
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return [str(len(values)), bl.fmt_seconds(ordered[0]), bl.fmt_seconds(statistics.median(values)),
            bl.fmt_seconds(p90), bl.fmt_seconds(ordered[-1])]


def render(args: argparse.Namespace, run: Run, end: dict, started: float) -> str:
    mib = bl.MiB
    cap = args.cap_mb * mib
    one = max(run.added) if run.added else args.churn_mb * mib
    peak = max(s.stored for s in run.capped)
    peak_files = max(s.files for s in run.capped)
    over = [s for s in run.capped if s.stored > cap]
    if peak > cap + one:
        run.problems.append(f"the store reached {peak / mib:.1f} MiB, over the cap plus one "
                            f"checkpoint ({(cap + one) / mib:.1f} MiB)")
    out = [f"## bench_soak: {args.checkpoints:,} hook checkpoints of {args.churn_mb} MB each "
           f"against a {args.cap_mb} MB cap", ""]
    out.append(bl.markdown_table(
        ["store size (sampled after every checkpoint)", "MiB"],
        [["cap (max_total_size_mb)", f"{cap / mib:.1f}"],
         ["one checkpoint (largest seen)", f"{one / mib:.1f}"],
         ["largest sample: objects (what the cap holds)", f"{peak / mib:.1f}"],
         ["largest sample: every file under objects/", f"{peak_files / mib:.1f}"],
         ["samples over the cap (by at most one checkpoint)", f"{len(over)} of "
          f"{len(run.capped)}"],
         ["at the end, the last pruning done", f"{end['final'] / mib:.1f}"]]))
    out += ["", "Checkpoint latency (the hook process, wall):", ""]
    base = statistics.median(run.baseline) if run.baseline else None
    rows = []
    for name, values in (
            ("no cap, no pruning (baseline)", run.baseline),
            ("capped, no pruning running", [s.seconds for s in run.capped if not s.pruning]),
            ("capped, a pruning running", [s.seconds for s in run.capped if s.pruning]),
            ("capped, all", [s.seconds for s in run.capped])):
        cells = stats(values)
        ratio = f"{statistics.median(values) / base:.2f}x" if values and base else "n/a"
        rows.append([name, *cells, ratio])
    out.append(bl.markdown_table(["checkpoints", "n", "min", "median", "p90", "max",
                                  "median / baseline"], rows))
    record = end.get("record", {})
    out += ["", f"Checkpoints taken: {end.get('taken')} of {args.checkpoints}; kept at the "
            f"end: {end.get('kept')}; `git fsck --strict`: exit {end.get('fsck')}; newest "
            f"restored whole: {end.get('newest')}; labelled restored whole: "
            f"{end.get('labelled')}.",
            f"Last pruning's record: {record.get('dropped_count')} checkpoints dropped, "
            f"{record.get('before_bytes', 0) / mib:.1f} -> {record.get('after_bytes', 0) / mib:.1f}"
            f" MiB, why: {record.get('why')}; left over: {record.get('left_over')}.",
            f"Wall time {time.monotonic() - started:.0f} s; load at the end "
            f"{os.getloadavg()[0]:.2f}.", "", "Machine:"]
    out += [f"- {k}: {v}" for k, v in bl.machine_info()]
    if run.notes:
        out += ["", "Notes:", *[f"- {n}" for n in run.notes]]
    if run.problems:
        out += ["", "PROBLEMS:"] + [f"- {p}" for p in run.problems]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rep = bl.Reporter()
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="bench_soak.", dir=args.tmp)).resolve()
    run = Run()
    try:
        state = soak(args, tmp, run, rep)
        end = check_end(args, tmp, state, run)
    finally:
        for home in ("capped", "baseline"):
            helper.stop(tmp / home / "rewind-hooks")
        if args.keep:
            rep.progress(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report = render(args, run, end, started)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    return 1 if run.problems else 0


if __name__ == "__main__":
    sys.exit(main())
