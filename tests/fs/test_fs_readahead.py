"""Files of a listed directory are read ahead and pushed into the kernel's page cache
(kernel cache mode): reading them afterwards sends the daemon no read request at all.
Those of the directories below it are read ahead too, and pushed as soon as their own
directory is listed.

A real mount, served by tests/fs/readahead_probe.py with its read requests counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2

from rewindfs.fs import capabilities
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
