"""Files of a listed directory are read ahead and pushed into the kernel's page cache
(kernel cache mode): reading them afterwards sends the daemon no read request at all.
Those of the directories below it are read ahead too, and pushed as soon as their own
directory is listed.

A real mount, served by tests/fs/readahead_probe.py with its read requests counted; the
last test drives the reader itself, to stop it in the middle of a read-ahead."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pygit2

from rewindfs.fs import capabilities
from rewindfs.fs.model import Model
from rewindfs.store import take

PROBE = Path(__file__).with_name("readahead_probe.py")


EXPECTED = {f"f{i:03d}.txt": f"file {i}\n" * (i + 1) for i in range(40)}


def probe(store, project, home, tmp_path, *extra: str) -> dict:
    assert capabilities.patched(), "scripts/setup builds the patched pyfuse3"
    for name, text in EXPECTED.items():
        (project / "src" / name).write_text(text)
    take(store, project, "many small files")
    mnt, out = tmp_path / "mnt", tmp_path / "probe.json"
    mnt.mkdir()
    env = {**os.environ, "HERMES_HOME": str(home)}
    subprocess.run([sys.executable, str(PROBE), str(home), str(mnt), str(out), *extra],
                   env=env, check=True, timeout=180)
    return json.loads(out.read_text())


def test_read_ahead_files_are_read_from_the_page_cache(store, project, home, fuse_usable,
                                                       tmp_path):
    report = probe(store, project, home, tmp_path)
    expected = EXPECTED
    assert "error" not in report, report
    assert "no-open" in report["mode"]
    assert report["pushed"] >= len(expected)  # the read-ahead happened, into the kernel
    files = report["files"]
    assert {n: files[n] for n in expected} == expected
    assert report["reads_after"] == report["reads_before"]  # no read reached the daemon


def test_files_below_a_listed_directory_are_read_ahead_before_it_is_listed(
        store, project, home, fuse_usable, tmp_path):
    oids = tmp_path / "oids.json"
    oids.write_text(json.dumps([str(pygit2.hash(t.encode())) for t in EXPECTED.values()]))
    report = probe(store, project, home, tmp_path, str(oids))
    assert "error" not in report, report
    # Only the checkpoint's top was listed when every file of src/ was in memory.
    assert report["cached_before_listing"] == len(EXPECTED)
    # The listing of src/ ended only once all of them were in the kernel's page cache:
    # read right after it, none reached the daemon.
    assert report["pushed_by_the_listings_end"] >= len(EXPECTED)
    files = report["files"]
    assert {n: files[n] for n in EXPECTED} == EXPECTED
    assert report["reads_after"] == report["reads_before"]


def test_close_waits_for_a_last_read_ahead_and_pushes_what_it_brings(store, project, layout):
    """close() while a read-ahead is in flight: the blob arriving then is pushed, and close()
    returns. (It once let go of the pushing thread before waiting for the read-ahead, whose
    arrival then started a second one; the stop could reach that one while close() waited
    for the first for ever: a `rewind mount` that never ended after its unmount.)"""
    (project / "a.txt").write_text("read ahead\n")
    take(store, project, "one file")
    blobs = Model(layout).context.blobs
    pushed: list[tuple[int, bytes]] = []
    blobs.on_prefetched = lambda inode, data: pushed.append((inode, data)) is None
    blobs.push_later([])  # the pushing thread is running
    in_fetch, closing = threading.Event(), threading.Event()

    class Stops(queue.SimpleQueue):
        def put(self, item: object, block: bool = True, timeout: float | None = None
                ) -> None:
            super().put(item, block, timeout)
            if item is None:  # close() has begun
                closing.set()

    blobs._queue = Stops()
    read_many = blobs._pipe.read_many

    def held(oids: list[str], arrived: Callable[[str, bytes | None], None]) -> None:
        # the read-ahead ends only once close() has begun
        in_fetch.set()
        assert closing.wait(60)
        read_many(oids, arrived)

    blobs._pipe.read_many = held
    oid = str(pygit2.hash(b"read ahead\n"))
    blobs.prefetch([(oid, 11, 7)])
    assert blobs.listed([(oid, 11, 7)]) == []  # being read: pushed once it arrives
    assert in_fetch.wait(60)
    closer = threading.Thread(target=blobs.close, daemon=True)
    closer.start()
    closer.join(60)
    assert not closer.is_alive(), "close() never returned"
    assert pushed == [(7, b"read ahead\n")]
