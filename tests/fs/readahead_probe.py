"""A mount served in this process with its read requests counted, for
test_fs_readahead: `python readahead_probe.py HOME MOUNTPOINT OUT.json [OIDS.json|-] [AGENT]`.

It lists one checkpoint directory, waits until its files are read ahead, then reads
each file and writes what the daemon saw to OUT.json: read requests before and
after, the files pushed to the page cache, and each file's bytes as read. With
OIDS.json (the blob ids of that directory's files), the checkpoint's top directory is
listed first and the probe waits for those blobs to be read ahead from below it,
reporting how many were in memory before their own directory was listed, and reading
them as soon as the listing returns. With AGENT
(kilo, opencode), the checkpoint is that agent's newest step (`<mnt>/AGENT/<project>/1`),
read through its own snapshots.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from rewindfs.fs import serve
from rewindfs.fs.model import Model
from rewindfs.fs.operations import RewindOperations
from rewindfs.store import Layout

DEADLINE = 60.0


class Counting(RewindOperations):
    def __init__(self, model: Model):
        super().__init__(model)
        self.reads = 0
        self.pushed: list[int] = []

    async def read(self, fh, off, size, inode=None):
        self.reads += 1
        return await super().read(fh, off, size, inode)

    def _push_to_page_cache(self, inode: int, data: bytes) -> bool:
        new = inode not in self._pushed
        pushed = super()._push_to_page_cache(inode, data)
        if new and inode in self._pushed:  # counted once the kernel has the pages
            self.pushed.append(inode)
        return pushed


def main(home: str, mnt: str, out: str, oids_file: str | None = None,
         agent: str | None = None) -> None:
    ops = Counting(Model(Layout.for_home(home)))
    report: dict = {}

    def drive() -> None:
        try:
            deadline = time.monotonic() + DEADLINE
            while not os.path.ismount(mnt) and time.monotonic() < deadline:
                time.sleep(0.02)
            top = Path(mnt) / agent if agent else Path(mnt)
            project = next(p for p in top.iterdir()
                           if p.is_dir() and p.name not in ("kilo", "opencode"))
            checkpoint = project / os.readlink(project / "1")
            # The reader of the store's objects, or of the agent's snapshots
            blobs = ops.model.resolve(str(checkpoint.relative_to(mnt))).context.blobs
            pushed = 0
            if oids_file not in (None, "-"):
                oids = json.loads(Path(oids_file).read_text())
                os.listdir(checkpoint)
                while not all(blobs.cached(o) for o in oids) and time.monotonic() < deadline:
                    time.sleep(0.02)  # read ahead from below the top (the test checks it)
                report["cached_before_listing"] = sum(blobs.cached(o) for o in oids)
                pushed = len(ops.pushed)
            names = sorted(os.listdir(checkpoint / "src"))
            report["pushed_by_the_listings_end"] = len(ops.pushed) - pushed
            files = [n for n in names if (checkpoint / "src" / n).is_file()]
            while (oids_file in (None, "-") and len(ops.pushed) < pushed + len(files)
                   and time.monotonic() < deadline):
                time.sleep(0.02)  # files arriving after the listing: pushed as they come
            report["mode"] = ops.mode
            report["pushed"] = len(ops.pushed)
            report["reads_before"] = ops.reads
            report["files"] = {n: (checkpoint / "src" / n).read_bytes().decode() for n in names
                               if (checkpoint / "src" / n).is_file()}
            report["reads_after"] = ops.reads
        except Exception as exc:  # noqa: BLE001 - reported to the test
            report["error"] = repr(exc)
        finally:
            Path(out).write_text(json.dumps(report))
            os.system(f"fusermount3 -u {mnt}")

    threading.Thread(target=drive, daemon=True).start()
    serve.serve(ops.model, Path(mnt), operations=ops)


if __name__ == "__main__":
    main(*sys.argv[1:6])
