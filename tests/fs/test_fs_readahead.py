"""Files of a listed directory are read ahead and pushed into the kernel's page cache
(kernel cache mode): reading them afterwards sends the daemon no read request at all.

A real mount, served by tests/fs/readahead_probe.py with its read requests counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rewindfs.fs import capabilities
from rewindfs.store import take

PROBE = Path(__file__).with_name("readahead_probe.py")


def test_read_ahead_files_are_read_from_the_page_cache(store, project, home, fuse_usable,
                                                       tmp_path):
    assert capabilities.patched(), "scripts/setup builds the patched pyfuse3"
    src = project / "src"
    expected = {f"f{i:03d}.txt": f"file {i}\n" * (i + 1) for i in range(40)}
    for name, text in expected.items():
        (src / name).write_text(text)
    take(store, project, "many small files")
    mnt, out = tmp_path / "mnt", tmp_path / "probe.json"
    mnt.mkdir()
    env = {**os.environ, "HERMES_HOME": str(home)}
    subprocess.run([sys.executable, str(PROBE), str(home), str(mnt), str(out)], env=env,
                   check=True, timeout=180)
    report = json.loads(out.read_text())
    assert "error" not in report, report
    assert "no-open" in report["mode"]
    assert report["pushed"] >= len(expected)  # the read-ahead happened, into the kernel
    files = report["files"]
    assert {n: files[n] for n in expected} == expected
    assert report["reads_after"] == report["reads_before"]  # no read reached the daemon
