"""The `bench_mount` subject for other agents' snapshots: a Kilo Code step in the mount.

The same two states as the checkpoints (the native copies of both) become two steps of
a Kilo session, written as Kilo CLI 7.7.7 writes them (a snapshot git dir driven with
`--git-dir`/`--work-tree` and `write-tree`, and its `kilo.db`; tests/sources/agentdata.py), and
are mounted by a `rewind mount` of their own at `<mnt>/kilo/<project>/<session>/<step>`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench_mount_subjects import REWIND, ROOT, Subject


def files_of(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def agent_subject(tmp: Path, home: Path, new_src: Path, old_src: Path,
                  packed: bool = False) -> Subject:
    """`packed`: the snapshots pinned and `git gc`ed, as Kilo's hourly cleanup leaves them
    (else loose, as `git add` wrote them)."""
    sys.path[:0] = [str(ROOT / "tests" / "sources"), str(ROOT / "tests")]
    from agentdata import AgentData  # the writer the tests use: one format, written once

    data = AgentData(tmp / "agent", "kilo", files=files_of(old_src), project="kilo-bench")
    newer = files_of(new_src)

    def edit(project: Path) -> None:
        for rel, content in newer.items():
            path = project / rel
            if not path.exists() or path.read_bytes() != content:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)

    data.session("bench")
    data.turn("edit one file in a hundred")
    data.step(edit)
    data.turn("look")
    data.step()
    data.save()
    if packed:
        data.pin()
        for git_dir in (data.gitdir, data.project / ".git"):
            subprocess.run(["git", "--git-dir", str(git_dir), "gc", "-q"], check=True)
    mnt = tmp / "mnt-kilo"
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(ROOT), **data.env}

    def start() -> None:
        subprocess.run([*REWIND, "mount", str(mnt)], env=env, check=True, capture_output=True)

    def stop() -> None:
        subprocess.run([*REWIND, "umount", str(mnt)], env=env, capture_output=True)

    def restart() -> None:
        stop()
        start()

    start()
    session = mnt / "kilo" / "kilo-bench" / data.sessions[0].id
    return Subject("rewindfs-kilo", session / "2.1", session / "1.1", restart, stop)
