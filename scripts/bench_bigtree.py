"""Big trees at the cost of what changed (issue 43): a project of many files, with `git status`
on the same tree in the same run as the baseline.

The tree: a directory given with --tree (a real source tree, committed to git: the bench
never writes to it but one file it edits and puts back), or a generated one of --files
small files (`benchlib.generate_many_small`, committed to git here first). What is timed,
each as whole processes (min and median of --repeats, round-robin so load that comes and
goes touches every case alike):

- `git status` (the baseline) and `git add -A && git commit` into a scratch repository
  (for the first checkpoint's ratio, once);
- the first checkpoint, `rewind checkpoint` in its own process (REWIND_NO_SERVER=1), once;
- the resident process: a session starts (Claude Code's UserPromptSubmit hook: the watch
  set up and a checkpoint taken in the background); then the destructive hook as agents
  run it (`bash -c` + `python -I -m rewindfs.hooks claude-code`, `rm -rf build`) with
  nothing changed and after one file changed;
- the verbs a person meets, served by the resident process: `status`, `list`, `show 1`,
  `diff --stat`, `log FILE`, a one-file `restore` (its pre-rollback snapshot included);
  the same on a 5,000-file project of the same run (the ratio the issue bounds);
- the resident process's memory (VmRSS, VmHWM) and its CPU time over --idle seconds of no
  change (it should spend none);
- each fallback's cost: the destructive hook once the watch is lost (events lost: the
  watch of the tree restarted, the next checkpoint walks).

    scripts/bench_bigtree --files 1000000
    scripts/bench_bigtree --tree /path/to/linux --repeats 10

Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

PYTHON = sys.executable
REWIND = shutil.which("rewind", path=os.path.dirname(PYTHON)) or "rewind"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", type=Path, help="a real tree committed to git (not written to)")
    p.add_argument("--files", type=int, default=1_000_000, help="files of a generated tree")
    p.add_argument("--generated", type=Path,
                   help="where the generated tree is kept between runs (made once)")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--idle", type=float, default=20.0, help="seconds to watch it idle")
    p.add_argument("--out", type=Path, help="also write the report here")
    return p.parse_args(argv)


def timed(argv: list[str], cwd: Path, env: dict[str, str], data: bytes | None = None,
          shell: bool = False) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall, cpu of the children, the process) of one whole-process run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, input=data, capture_output=True,
                          shell=shell, stdin=None if data is not None else subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"bench_bigtree: {argv}: exit {proc.returncode}: "
                         f"{proc.stderr.decode(errors='replace')[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def payload(cwd: Path, command: str, n: int, event: str = "PreToolUse") -> bytes:
    data = {"session_id": "bench", "transcript_path": "/dev/null", "cwd": str(cwd),
            "hook_event_name": event, "tool_use_id": f"toolu_{n}"}
    if event == "PreToolUse":
        data.update(tool_name="Bash", tool_input={"command": command})
    else:
        data.update(prompt=command)
    return json.dumps(data).encode()


class Bench:
    def __init__(self, args: argparse.Namespace, tmp: Path):
        self.args, self.tmp = args, tmp
        self.home = tmp / "home"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("REWIND_", "GIT_"))}
        self.env.update(HERMES_HOME=str(self.home), HOME=str(tmp), LC_ALL="C.UTF-8",
                        REWIND_HOOK_HELPER_IDLE="3600", GIT_AUTHOR_NAME="bench",
                        GIT_AUTHOR_EMAIL="bench@localhost", GIT_COMMITTER_NAME="bench",
                        GIT_COMMITTER_EMAIL="bench@localhost")
        self.plain = {**self.env, "REWIND_NO_SERVER": "1"}
        from rewindfs.hooks.agents import hook_command

        self.hook = hook_command("claude-code", PYTHON)
        self.rows: list[list[str]] = []
        self.n = 0

    def hook_run(self, root: Path, command: str, event: str = "PreToolUse") -> tuple:
        self.n += 1
        return timed(["bash", "-c", self.hook], root, self.env,
                     payload(root, command, self.n, event))

    def resident_pid(self) -> int:
        from rewindfs.hooks import helper

        pid = helper.running(self.home / "rewind-hooks")
        if pid is None:
            raise SystemExit("bench_bigtree: no resident process")
        return pid

    def watched(self, root: Path) -> dict:
        from rewindfs.resident.source import ask

        os.environ["HERMES_HOME"] = str(self.home)
        found = ask({"kind": "status"}) or {}
        for project in found.get("projects", []):
            if project.get("root") == str(root):
                return project
        return {}

    def start_session(self, root: Path, rep: bl.Reporter) -> float:
        """The session's first prompt, then until its background checkpoint is the watch's
        base (the hook with nothing changed no longer walks). Returns the seconds."""
        from rewindfs.resident.source import ask

        os.environ["HERMES_HOME"] = str(self.home)
        timed([REWIND, "list"], root, self.env)   # starts the resident process, if none
        end = time.monotonic() + 120
        while ask({"kind": "status"}) is None and time.monotonic() < end:
            time.sleep(0.1)
        start = time.perf_counter()
        self.hook_run(root, "start", "UserPromptSubmit")
        end = time.monotonic() + 3600
        while time.monotonic() < end:
            project = self.watched(root)
            if project.get("state") == "ready" and project.get("base"):
                break
            time.sleep(0.1)
        # The background checkpoint holds the project lock until done: a hook waits for it.
        self.hook_run(root, "rm -rf build")
        rep.progress(f"session started: {self.watched(root)}")
        return time.perf_counter() - start


def fmt(samples: list[float]) -> str:
    return f"{bl.fmt_seconds(min(samples))} / {bl.fmt_seconds(statistics.median(samples))}"


def run(args: argparse.Namespace, tmp: Path, rep: bl.Reporter) -> str:
    bench = Bench(args, tmp)
    if args.tree is not None:
        big = args.tree.resolve()
        described = f"{big.name} ({args.tree})"
    else:
        big = (args.generated or tmp / "generated").resolve()
        if not (big / ".git").exists():
            rep.progress(f"generating {args.files:,} files in {big}")
            bl.generate_many_small(big, files=args.files, per_dir=50)
            subprocess.run("git init -q && git add -A && git commit -qm init", shell=True,
                           cwd=big, check=True, env=bench.env)
        described = f"generated, {args.files:,} small files"
    count = int(subprocess.run("git ls-files | wc -l", shell=True, cwd=big, env=bench.env,
                               capture_output=True, text=True).stdout)
    generated = bl.generate_project(tmp / "small", files=5_000,
                                    total_bytes=5_000 * 4 * bl.KiB, node_modules_files=0,
                                    binary_bytes=0)
    small, small_edit = generated.root, str(generated.files[0])
    subprocess.run("git init -q && git add -A && git commit -qm init", shell=True, cwd=small,
                   check=True, env=bench.env, capture_output=True)
    edit = _a_tracked_file(big, bench.env)
    original = (big / edit).read_bytes()
    lines: list[str] = []
    try:
        rep.progress("git add -A && git commit into a scratch repository (once)")
        scratch = tmp / "scratch.git"
        genv = {**bench.env, "GIT_DIR": str(scratch), "GIT_WORK_TREE": str(big)}
        subprocess.run(["git", "init", "-q", "--bare", str(scratch)], check=True, env=bench.env)
        git_commit, _, _ = timed(["bash", "-c", "git add -A && git commit -qm scratch"], big,
                                 genv)
        shutil.rmtree(scratch)
        rep.progress("the first checkpoint, in its own process")
        first, first_cpu, _ = timed([REWIND, "checkpoint", "-m", "first"], big, bench.plain)
        timed([REWIND, "checkpoint", "-m", "first"], small, bench.plain)
        rep.progress("a session starts: the watch, a checkpoint in the background")
        session = bench.start_session(big, rep)
        bench.start_session(small, rep)
        samples: dict[str, list[float]] = {}

        def sample(name: str, argv: list[str] | None, root: Path, command: str = "",
                   changed: bool = False) -> None:
            if changed:
                with open(root / (edit if root == big else small_edit), "ab") as fh:
                    fh.write(b"// edited by bench_bigtree\n")
            if argv is None:
                wall, _, _ = bench.hook_run(root, command)
            else:
                wall, _, _ = timed(argv, root, bench.env if argv[0] != "git" else bench.env)
            samples.setdefault(name, []).append(wall)

        verbs = [("status", [REWIND, "status"]), ("list", [REWIND, "list"]),
                 ("show 1", [REWIND, "show", "1"]), ("diff --stat", [REWIND, "diff", "--stat"]),
                 ("log FILE", None), ("restore 1 FILE", None)]
        for i in range(args.repeats + 1):
            rep.progress(f"repeat {i}/{args.repeats}")
            for root, tag in ((big, "big"), (small, "small")):
                target = edit if root == big else small_edit
                if tag == "big":
                    sample("git status", ["git", "status", "--porcelain"], root)
                # One change first: the last round's `restore 1 FILE` changed the tree too, so
                # "no change" is measured once a checkpoint holds every change.
                sample(f"hook one change ({tag})", None, root, "rm -rf build", changed=True)
                sample(f"hook no change ({tag})", None, root, "rm -rf build")
                for name, argv in verbs:
                    if name == "log FILE":
                        argv = [REWIND, "log", str(target)]
                    elif name == "restore 1 FILE":
                        argv = [REWIND, "restore", "1", str(target), "--yes"]
                        with open(root / target, "ab") as fh:
                            fh.write(b"// to be restored\n")
                    sample(f"{name} ({tag})", argv, root)
        for values in samples.values():
            del values[0]   # the first round warms caches
        pid = bench.resident_pid()
        rss, hwm = _memory(pid)
        rep.progress(f"watching it idle for {args.idle:g}s")
        idle_cpu = _cpu_over(pid, args.idle)
        rep.progress("a fallback: the watch lost (the tree watched anew, the next walks)")
        lost = _fallback(bench, big, edit)
        base = statistics.median(samples["git status"])
        rows = [["`git status --porcelain` (baseline)", fmt(samples["git status"]), "1.00x",
                 ""]]
        for name, target in (("hook no change (big)", (0.3, 80)),
                             ("hook one change (big)", (0.4, 120))):
            med = statistics.median(samples[name])
            # (the milliseconds bound the issue sets for the million generated files alone)
            million = args.tree is None and args.files >= 1_000_000
            ok = med <= target[0] * base and (not million or med * 1000 <= target[1])
            bound = f"<= {target[0]}x" + (f" and <= {target[1]} ms" if million else "")
            rows.append([f"destructive hook, {name[5:-6]}", fmt(samples[name]),
                         f"{med / base:.2f}x", f"{bound}: {'met' if ok else 'MISSED'}"])
        rows.append(["first checkpoint (own process)", bl.fmt_seconds(first),
                     f"{first / git_commit:.2f}x of `git add -A && git commit` "
                     f"({bl.fmt_seconds(git_commit)})",
                     f"<= 0.5x: {'met' if first <= 0.5 * git_commit else 'MISSED'}"])
        rows.append(["a session's start: watch + background checkpoint",
                     bl.fmt_seconds(session), "", ""])
        for name, _ in verbs:
            b, s = samples[f"{name} (big)"], samples[f"{name} (small)"]
            ratio = statistics.median(b) / statistics.median(s)
            rows.append([f"`{name}` served", f"{fmt(b)} (5,000 files: {fmt(s)})",
                         f"{ratio:.2f}x of 5,000 files",
                         f"<= 1.5x: {'met' if ratio <= 1.5 else 'MISSED'}"])
        rows.append(["resident process memory", f"RSS {rss} MB, peak {hwm} MB", "",
                     f"<= 200 MB: {'met' if hwm <= 200 else 'MISSED'}"])
        rows.append([f"its CPU over {args.idle:g} s of no change", f"{idle_cpu * 1000:.0f} ms",
                     "", ""])
        rows.append(["fallback: hook after the watch was lost (walks)", bl.fmt_seconds(lost),
                     f"{lost / base:.2f}x", ""])
        lines = [f"# bench_bigtree: {described}, {count:,} tracked files, "
                 f"{args.repeats} repeats", "",
                 "Whole processes, wall time min / median; ratios of medians.", "",
                 bl.markdown_table(["case", "time", "ratio", "target"], rows), "",
                 f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
                 "", bl.markdown_table(["machine", ""], bl.machine_info())]
    finally:
        (big / edit).write_bytes(original)
        from rewindfs.hooks import helper

        helper.stop(bench.home / "rewind-hooks")
    return "\n".join(lines) + "\n"


def _a_tracked_file(root: Path, env: dict[str, str]) -> str:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, env=env, capture_output=True,
                            check=True).stdout.split(b"\0")
    for name in listed[len(listed) // 2:]:
        if name.endswith((b".c", b".txt", b".md", b".py")):
            return name.decode()
    return listed[0].decode()


def _memory(pid: int) -> tuple[int, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


def _cpu_over(pid: int, seconds: float) -> float:
    def used() -> float:
        parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")

    before = used()
    time.sleep(seconds)
    return used() - before


def _fallback(bench: Bench, root: Path, edit: str) -> float:
    """The watch of `root` lost (its directory moved away and back: the watch cannot
    tell what happened meanwhile), then the destructive hook: it walks."""
    moved = root.with_name(root.name + ".moved")
    os.rename(root, moved)
    os.rename(moved, root)
    end = time.monotonic() + 60
    while bench.watched(root).get("state") not in ("lost", None) and time.monotonic() < end:
        time.sleep(0.05)
    wall, _, _ = bench.hook_run(root, "rm -rf build")
    return wall


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rep = bl.Reporter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-bigtree-"))
    try:
        text = run(args, tmp, rep)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
