"""How many kernel requests each `bench_mount` case sends to the mount, and the handlers'
own time: the request counts in docs/performance.md (mount).

Mounts the generated project's store in this process with every handler counted,
runs each warm case once to warm up and once to count, and prints a table.
Usage: .venv/bin/python scripts/bench_mount_requests.py [--files N] [--no-kernel-cache]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_mount  # noqa: E402
import benchlib as bl  # noqa: E402

from rewindfs.fs import serve  # noqa: E402
from rewindfs.fs.model import Model  # noqa: E402
from rewindfs.fs.operations import RewindOperations  # noqa: E402
from rewindfs.store import Layout  # noqa: E402

HANDLERS = ("lookup", "forget", "getattr", "readlink", "opendir", "readdir", "releasedir",
            "open", "read", "release", "flush", "getxattr", "listxattr", "statfs")


class Counted(RewindOperations):
    """The real adapter, with each handler's calls and time inside it added up."""

    def __init__(self, model: Model, kernel_cache: bool = True):
        super().__init__(model, kernel_cache=kernel_cache)
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()

    def reset(self) -> None:
        self.calls.clear()
        self.seconds.clear()


def _counting(name: str):
    handler = getattr(RewindOperations, name)

    async def counted(self: Counted, *args, **kwargs):
        start = time.perf_counter()
        try:
            return await handler(self, *args, **kwargs)
        finally:
            self.calls[name] += 1
            self.seconds[name] += time.perf_counter() - start

    return counted


for _name in HANDLERS:
    setattr(Counted, _name, _counting(_name))


def run_cases(ops: Counted, new: Path, old: Path, work: Path, mnt: Path,
              rows: list[list[str]]) -> None:
    for case in bench_mount.CASES:
        if case.cold:
            continue
        command = case.command.format(new=new, old=old, work=work)
        subprocess.run(["bash", "-c", command], check=False)  # warm up
        ops.reset()
        start = time.perf_counter()
        subprocess.run(["bash", "-c", command], check=False)
        elapsed = time.perf_counter() - start
        total = sum(ops.calls.values())
        inside = sum(ops.seconds.values())
        top = ", ".join(f"{n} {c}" for n, c in ops.calls.most_common(4))
        per = max(total, 1)
        rows.append([case.name, f"{total:,}", top, bl.fmt_seconds(elapsed),
                     f"{elapsed / per * 1e6:.0f} us", f"{inside / per * 1e6:.1f} us"])
    subprocess.run(["fusermount3", "-u", str(mnt)], check=False)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=5_000)
    p.add_argument("--no-kernel-cache", action="store_true",
                   help="count the requests of stock mode (what stock pyfuse3 makes)")
    args = p.parse_args()
    rep = bl.Reporter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-mount-requests-"))
    try:
        work, home, name = bench_mount.prepare(tmp, args.files, rep)
        mnt = tmp / "mnt"
        mnt.mkdir()
        ops = Counted(Model(Layout.for_home(home)), kernel_cache=not args.no_kernel_cache)
        rows: list[list[str]] = []

        def drive() -> None:
            while not os.path.ismount(mnt):
                time.sleep(0.05)
            folder = mnt / name
            new, old = folder / os.readlink(folder / "1"), folder / os.readlink(folder / "2")
            run_cases(ops, new, old, work, mnt, rows)

        threading.Thread(target=drive, daemon=True).start()
        serve.serve(ops.model, mnt, operations=ops)
        print(f"mode: {ops.mode}")
        print(bl.markdown_table(["case", "requests", "most frequent", "wall", "wall per request",
                                 "handler per request"], rows))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
