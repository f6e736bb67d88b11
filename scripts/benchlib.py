"""Shared helpers for rewindfs benchmarks (scripts/bench_*.py).

* project generators: deterministic (seeded) source trees of text files with
  log-normal sizes, an ignored node_modules/, an oversize binary, and a "many small
  files" tree;
* timing: repeats with a per-repeat untimed setup, both tools timed on the same
  state in the same repeat (alternating who goes first), medians;
* reporting: machine description and a markdown table.

Benchmarks are not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

KiB = 1024
MiB = 1024 * 1024

# --------------------------------------------------------------------------------------
# Project generators
# --------------------------------------------------------------------------------------

# Extensions none of the default excludes (Hermes's and rewindfs's) match.
TEXT_EXTENSIONS = (".py", ".js", ".ts", ".md", ".txt", ".json", ".c", ".h", ".go", ".rs",
                   ".yaml", ".toml", ".css", ".html", ".sh")
_WORDS = (
    "alpha beta gamma delta value result index count buffer handle request response "
    "config state node tree item list map key path file data user token error retry "
    "cache store load save parse render update create delete check apply merge split"
).split()
# Directory names that no default exclude matches (no build/, dist/, env/, out/, ...).
_DIR_WORDS = ("src", "lib", "core", "util", "api", "app", "pkg", "mod", "feat", "svc",
              "ui", "db", "net", "io", "cmd", "docs", "tests", "models", "views", "hooks")


@dataclass
class Project:
    """A generated project: where it is and what is in it."""

    root: Path
    files: list[Path]  # the checkpointable text files (relative paths), in creation order
    total_bytes: int
    ignored_files: int = 0  # files under node_modules/
    oversize: list[Path] = field(default_factory=list)  # files above the 10 MB cap
    oversize_bytes: int = 0

    def describe(self) -> str:
        parts = [f"{len(self.files):,} text files ({self.total_bytes / MiB:.1f} MiB)"]
        if self.ignored_files:
            parts.append(f"{self.ignored_files:,} node_modules files")
        if self.oversize:
            names = ", ".join(map(str, self.oversize))
            parts.append(f"{self.oversize_bytes / MiB:.0f} MiB over the size cap ({names})")
        return ", ".join(parts)


def _corpus(rng: random.Random, size: int) -> str:
    """Code-like text to slice file contents from (compresses like real source)."""
    lines: list[str] = []
    n = 0
    while n < size:
        indent = "    " * rng.randrange(4)
        kind = rng.random()
        if kind < 0.15:
            line = f"def {rng.choice(_WORDS)}_{rng.randrange(1000)}({rng.choice(_WORDS)}, " \
                   f"{rng.choice(_WORDS)}={rng.randrange(100)}):"
        elif kind < 0.3:
            line = "# " + " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 12)))
        elif kind < 0.4:
            line = ""
        else:
            line = (f"{rng.choice(_WORDS)}_{rng.randrange(50)} = {rng.choice(_WORDS)}."
                    f"{rng.choice(_WORDS)}({rng.choice(_WORDS)}, {rng.randrange(10_000)})")
        lines.append(indent + line if line else line)
        n += len(lines[-1]) + 1
    return "\n".join(lines) + "\n"


def _make_dirs(rng: random.Random, count: int, max_depth: int) -> list[Path]:
    """`count` nested directory paths (relative), depth 1..max_depth, including '.'."""
    dirs: list[tuple[Path, int]] = [(Path("."), 0)]
    used: set[Path] = {Path(".")}
    while len(dirs) < count + 1:
        parent, depth = rng.choice(dirs)
        if depth >= max_depth:
            continue
        name = f"{rng.choice(_DIR_WORDS)}{rng.randrange(100)}"
        path = parent / name
        if path in used:
            continue
        used.add(path)
        dirs.append((path, depth + 1))
    return [d for d, _ in dirs]


def _lognormal_sizes(rng: random.Random, n: int, total: int, sigma: float = 1.3,
                     lo: int = 32, hi: int = 4 * MiB) -> list[int]:
    raw = [rng.lognormvariate(0.0, sigma) for _ in range(n)]
    scale = total / sum(raw)
    return [max(lo, min(hi, int(r * scale))) for r in raw]


def generate_project(
    root: Path,
    *,
    files: int = 5_000,
    total_bytes: int = 50 * MiB,
    max_depth: int = 5,
    node_modules_files: int = 2_000,
    binary_bytes: int = 12 * MiB,
    seed: int = 1,
) -> Project:
    """A source tree: text files with log-normal sizes in nested directories, an
    ignored node_modules/, and one binary over the 10 MB default cap. Deterministic."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    corpus = _corpus(rng, 4 * MiB)
    dirs = _make_dirs(rng, max(1, files // 12), max_depth)
    sizes = _lognormal_sizes(rng, files, total_bytes)
    made: set[Path] = set()
    out: list[Path] = []
    written = 0
    for i, size in enumerate(sizes):
        d = rng.choice(dirs)
        rel = d / f"{rng.choice(_WORDS)}_{i}{rng.choice(TEXT_EXTENSIONS)}"
        if d not in made:
            (root / d).mkdir(parents=True, exist_ok=True)
            made.add(d)
        header = f"// file {i} of seed {seed}\n"
        start = rng.randrange(len(corpus))
        body = corpus[start:start + size]
        while len(body) < size:
            body += corpus[: size - len(body)]
        data = (header + body[: max(0, size - len(header))]).encode()
        (root / rel).write_bytes(data)
        written += len(data)
        out.append(rel)
    project = Project(root=root, files=out, total_bytes=written)
    # A project, as the agent hooks require one to be (a folder in no project is refused):
    # its marker, beside the files.
    (root / "package.json").write_text('{"name": "bench"}\n')

    if node_modules_files:
        nm_rng = random.Random(seed + 1)
        pkgs = max(1, node_modules_files // 20)
        for i in range(node_modules_files):
            pkg = f"node_modules/pkg{i % pkgs}/lib/sub{(i // pkgs) % 3}"
            (root / pkg).mkdir(parents=True, exist_ok=True)
            start = nm_rng.randrange(len(corpus))
            (root / pkg / f"index{i}.js").write_text(
                f"// module {i}\n" + corpus[start:start + nm_rng.randrange(200, 6000)])
        project.ignored_files = node_modules_files

    if binary_bytes:
        rel = Path("assets/dataset.bin")
        (root / rel.parent).mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(random.Random(seed + 2).randbytes(binary_bytes))
        project.oversize.append(rel)
        project.oversize_bytes += binary_bytes
    return project


def generate_many_small(root: Path, *, files: int = 200_000, per_dir: int = 500,
                        seed: int = 2) -> Project:
    """`files` small (100-600 byte) text files, `per_dir` to a directory, two levels deep."""
    rng = random.Random(seed)
    corpus = _corpus(rng, 256 * KiB)
    out: list[Path] = []
    written = 0
    n_dirs = math.ceil(files / per_dir)
    fanout = max(1, math.isqrt(n_dirs))
    for i in range(files):
        d = Path(f"src/g{(i // per_dir) // fanout}/m{(i // per_dir) % fanout}")
        if i % per_dir == 0:
            (root / d).mkdir(parents=True, exist_ok=True)
        rel = d / f"f{i}.txt"
        start = rng.randrange(len(corpus) - 1000)
        data = (f"# {i}\n" + corpus[start:start + rng.randrange(100, 600)]).encode()
        with open(root / rel, "wb") as fh:
            fh.write(data)
        written += len(data)
        out.append(rel)
    (root / "package.json").write_text('{"name": "bench"}\n')   # a project (hooks)
    return Project(root=root, files=out, total_bytes=written)


def touch_one_file(project: Project, n: int) -> Path:
    """Append a line to one text file (a different one for each `n`); returns its path."""
    rel = project.files[(n * 7919) % len(project.files)]
    with open(project.root / rel, "a") as fh:
        fh.write(f"// edit {n} at {time.time_ns()}\n")
    return rel


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


@dataclass
class Timing:
    """Wall-clock samples of one tool in one case (seconds), plus what the calls returned."""

    samples: list[float] = field(default_factory=list)
    results: list[object] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan

    def spread(self) -> str:
        if len(self.samples) < 2:
            return ""
        return f"{fmt_seconds(min(self.samples))}..{fmt_seconds(max(self.samples))}"


class Profiler:
    """Accumulates a cProfile over chosen timed calls (timings get inflated while on)."""

    def __init__(self) -> None:
        self.profile = cProfile.Profile()
        self.calls = 0

    def report(self, limit: int = 30, sort: str = "cumtime") -> str:
        buf = io.StringIO()
        pstats.Stats(self.profile, stream=buf).strip_dirs().sort_stats(sort).print_stats(limit)
        return buf.getvalue()


def time_call(fn: Callable[[], object], profiler: Profiler | None = None
              ) -> tuple[float, object]:
    """(seconds, return value) of one call."""
    if profiler is not None:
        profiler.calls += 1
        profiler.profile.enable()
    t0 = time.perf_counter()
    try:
        result = fn()
    finally:
        elapsed = time.perf_counter() - t0
        if profiler is not None:
            profiler.profile.disable()
    return elapsed, result


def measure(
    fns: dict[str, Callable[[], object]],
    repeats: int,
    *,
    setup: Callable[[int], object] | None = None,
    profilers: dict[str, Profiler] | None = None,
    alternate: bool = True,
) -> dict[str, Timing]:
    """Time every function `repeats` times, side by side.

    Each repeat runs `setup(i)` (untimed) once, then each function once on the state
    it left; with `alternate`, the order of the functions flips every repeat so
    neither tool always gets the warmer cache.
    """
    timings = {name: Timing() for name in fns}
    names = list(fns)
    for i in range(repeats):
        if setup is not None:
            setup(i)
        order = names if not alternate or i % 2 == 0 else names[::-1]
        for name in order:
            prof = (profilers or {}).get(name)
            elapsed, result = time_call(fns[name], prof)
            timings[name].samples.append(elapsed)
            timings[name].results.append(result)
    return timings


# --------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------


def fmt_seconds(s: float | None) -> str:
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1.0:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def _version(cmd: Sequence[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unavailable"


def machine_info() -> list[tuple[str, str]]:
    import pygit2

    try:
        from importlib.metadata import version

        hermes = version("hermes-agent")
    except Exception:  # noqa: BLE001 - informational only
        hermes = "unknown"
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError):
        mem = "unknown"
    return [
        ("nproc", str(os.cpu_count())),
        ("cpu", cpu),
        ("memory", mem),
        ("os", f"{platform.system()} {platform.release()}"),
        ("python", f"{platform.python_version()} ({sys.executable})"),
        ("pygit2 / libgit2", f"{pygit2.__version__} / {pygit2.LIBGIT2_VERSION}"),
        ("git", _version(["git", "--version"])),
        ("hermes-agent", hermes),
    ]


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    rows = [list(map(str, r)) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def ratio_cell(baseline: float | None, ours: float | None) -> tuple[str, float | None]:
    """('12.3x', 12.3) for baseline/ours, or ('n/a', None)."""
    if baseline is None or ours is None or math.isnan(baseline) or math.isnan(ours) or ours <= 0:
        return "n/a", None
    r = baseline / ours
    return (f"{r:.1f}x" if r < 100 else f"{r:.0f}x"), r


class Reporter:
    """Prints progress to stderr and collects the report that goes to stdout / --out."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def progress(self, msg: str) -> None:
        print(f"[{time.perf_counter() - self.t0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Reading a checkpoint store (read-only; works for stores written by either tool)
# --------------------------------------------------------------------------------------


def project_h16(workdir: str | os.PathLike[str]) -> str:
    """Hermes v2's project hash: sha256 of the resolved absolute path, 16 hex digits."""
    import hashlib

    return hashlib.sha256(str(Path(workdir).expanduser().resolve()).encode()).hexdigest()[:16]


@dataclass
class Tip:
    commit: str | None
    tree: str | None
    count: int  # checkpoints on the project ref (first-parent chain, down to `shallow`)


def store_tip(base: Path, workdir: Path) -> Tip:
    """The project's tip and checkpoint count in the store under checkpoint base `base`."""
    import pygit2

    store = base / "store"
    if not (store / "HEAD").exists():
        return Tip(None, None, 0)
    repo = pygit2.Repository(str(store))
    ref = repo.references.get(f"refs/hermes/{project_h16(workdir)}")
    if ref is None:
        return Tip(None, None, 0)
    # History stops at a commit listed in `shallow` (how rewindfs prunes), as in git.
    try:
        stop = set((store / "shallow").read_text().split())
    except FileNotFoundError:
        stop = set()
    commit = ref.peel(pygit2.Commit)
    tip = Tip(str(commit.id), str(commit.tree_id), 0)
    while True:
        tip.count += 1
        if not commit.parent_ids or str(commit.id) in stop:
            break
        try:
            commit = repo[commit.parent_ids[0]]
        except KeyError:
            break
    return tip


def tree_files(base: Path, tree_id: str) -> dict[str, tuple[int, str]]:
    """path -> (mode, blob id) of every non-tree entry under `tree_id`."""
    import pygit2

    repo = pygit2.Repository(str(base / "store"))
    out: dict[str, tuple[int, str]] = {}
    stack: list[tuple[str, pygit2.Tree]] = [("", repo[tree_id])]
    while stack:
        prefix, tree = stack.pop()
        for entry in tree:
            path = prefix + entry.name
            if entry.type_str == "tree":
                stack.append((path + "/", repo[entry.id]))
            else:
                out[path] = (entry.filemode, str(entry.id))
    return out


def compare_trees(base_a: Path, tree_a: str, base_b: Path, tree_b: str, limit: int = 10
                  ) -> list[str]:
    """Human-readable differences between two trees in two stores ([] when identical)."""
    if tree_a == tree_b:
        return []
    a, b = tree_files(base_a, tree_a), tree_files(base_b, tree_b)
    lines = []
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    changed = sorted(p for p in set(a) & set(b) if a[p] != b[p])
    for label, paths in (("only in first", only_a), ("only in second", only_b),
                         ("differ", changed)):
        if paths:
            shown = ", ".join(paths[:limit]) + (" ..." if len(paths) > limit else "")
            lines.append(f"{len(paths)} {label}: {shown}")
    return lines


def parse_args(argv: list[str] | None, doc: str | None, quick: str,
               repeats: int) -> argparse.Namespace:
    """The options the simpler benchmarks share: --quick (what it shrinks, `quick`),
    --repeats, --seed, --out, --tmp and --keep."""
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=quick)
    p.add_argument("--repeats", type=int, default=repeats, metavar="N")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, metavar="FILE", help="also write the report here")
    p.add_argument("--tmp", type=Path, metavar="DIR", help="where to make the tmp dir")
    p.add_argument("--keep", action="store_true", help="keep the tmp dir")
    return p.parse_args(argv)


@contextmanager
def tmp_dir(args: argparse.Namespace, prefix: str) -> Iterator[Path]:
    """The benchmark's tmp dir (under --tmp), removed afterwards unless --keep."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=args.tmp))
    try:
        yield tmp
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def emit(out: list[str], problems: list[str], args: argparse.Namespace) -> int:
    """Print the report (and write it to --out), problems last; 1 if there were any."""
    text = "\n".join(out + [f"PROBLEM: {p}" for p in problems])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 1 if problems else 0
