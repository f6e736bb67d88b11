"""A mount served in this process with its read requests counted, for
test_fs_readahead: `python readahead_probe.py HOME MOUNTPOINT OUT.json`.

It lists one checkpoint directory, waits until its files are read ahead, then reads
each file and writes what the daemon saw to OUT.json: read requests before and
after, the files pushed to the page cache, and each file's bytes as read.
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

    def _push_to_page_cache(self, inode: int, data: bytes) -> None:
        self.pushed.append(inode)
        super()._push_to_page_cache(inode, data)


def main(home: str, mnt: str, out: str) -> None:
    ops = Counting(Model(Layout.for_home(home)))
    report: dict = {}

    def drive() -> None:
        try:
            deadline = time.monotonic() + DEADLINE
            while not os.path.ismount(mnt) and time.monotonic() < deadline:
                time.sleep(0.02)
            project = next(p for p in Path(mnt).iterdir() if p.is_dir())
            checkpoint = project / os.readlink(project / "1")
            names = sorted(os.listdir(checkpoint / "src"))
            blobs = ops.model.context.blobs
            while (blobs._pending or not ops.pushed) and time.monotonic() < deadline:
                time.sleep(0.02)  # the read-ahead is done (the test checks it was)
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
    main(*sys.argv[1:4])
