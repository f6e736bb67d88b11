"""Big checkpoint stores, built in seconds for scripts/bench_scale.py.

Thousands of checkpoints taken one by one would take an hour; what the commands
being measured see is only the store: refs, commits, trees, blobs, project records.
So the history is written directly with `git fast-import` (git itself is the right
tool here: it streams every commit of every project into one pack), in the shape
rewindfs's own checkpoints have: a project of `files` small text files, each
checkpoint appending a line to one of them, with the reason and the Rewind-Stats /
Rewind-Time trailers a real checkpoint records (or, for Hermes-written ones, a bare
subject and no trailers).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from rewindfs.store.history import projects
from rewindfs.store.objects import Layout, Store, project_hash

DIRS = ("src", "src/core", "docs")


@dataclass
class Built:
    """A store and the projects written into it (workdirs exist, with the tip's files)."""

    home: Path
    workdirs: list[Path] = field(default_factory=list)
    checkpoints: dict[Path, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.checkpoints.values())


def file_names(files: int) -> list[str]:
    return [f"{DIRS[i % len(DIRS)]}/mod_{i:03d}.py" for i in range(files)]


def changed_file(n: int, files: int) -> int:
    """Which file checkpoint `n` (0 = the first) appends to: file 0 every 7th, else spread."""
    return 0 if n % 7 == 0 else (n * 31) % files


def build(home: Path, counts: list[int], *, files: int = 20, hermes_every: int = 0,
          materialize: int = 0, start: float | None = None) -> Built:
    """A HERMES_HOME at `home` holding one project per entry of `counts` (its number of
    checkpoints). Every `hermes_every`-th checkpoint (0: none) is written as Hermes writes
    them. The first `materialize` projects get their tip's files on disk (the others an
    empty directory: a live project as far as status can tell)."""
    layout = Layout.for_home(home)
    Store(layout).ensure()
    built = Built(home)
    names = file_names(files)
    start = time.time() - 86400 * 30 if start is None else start
    stream = _Stream()
    for index, count in enumerate(counts):
        workdir = home.parent / "projects" / f"p{index:04d}"
        workdir.mkdir(parents=True, exist_ok=True)
        h16 = project_hash(workdir)
        contents = [f"# {name} of project {index}\n".encode() for name in names]
        for n in range(count):
            if n:
                changed = changed_file(n, files)
                contents[changed] += f"line {n}\n".encode()
            when = int(start + n * 60 + index)
            hermes = bool(hermes_every) and n % hermes_every == hermes_every - 1
            stream.commit(f"refs/hermes/{h16}", when, _message(n, files, hermes, when),
                          names if n == 0 else [names[changed_file(n, files)]], names, contents,
                          first=n == 0)
        if index < materialize:
            for name, data in zip(names, contents, strict=True):
                (workdir / name).parent.mkdir(parents=True, exist_ok=True)
                (workdir / name).write_bytes(data)
        projects.touch(layout, h16, workdir)
        built.workdirs.append(workdir)
        built.checkpoints[workdir] = count
    stream.run(layout.store)
    return built


def _message(n: int, files: int, hermes: bool, when: int) -> str:
    reason = "before patch" if n % 3 else f"before terminal: make step-{n}"
    if hermes:
        return reason + "\n"
    stats = f"files={files} insertions=0 deletions=0" if n == 0 else \
        "files=1 insertions=1 deletions=0"
    return f"{reason}\n\nRewind-Stats: {stats}\nRewind-Time: {when}.000000\n"


class _Stream:
    """A fast-import stream: each commit restates only the files it changed."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.mark = 0
        self.last: dict[str, int] = {}

    def commit(self, ref: str, when: int, message: str, changed: list[str], names: list[str],
               contents: list[bytes], *, first: bool) -> None:
        self.mark += 1
        who = f"rewindfs <rewindfs@local> {when} +0000"
        msg = message.encode()
        out = [f"commit {ref}\nmark :{self.mark}\nauthor {who}\ncommitter {who}\n"
               f"data {len(msg)}\n".encode(), msg, b"\n"]
        if not first:
            out.append(f"from :{self.last[ref]}\n".encode())
        for name in changed:
            data = contents[names.index(name)]
            out.append(f"M 100644 inline {name}\ndata {len(data)}\n".encode())
            out.append(data)
            out.append(b"\n")
        out.append(b"\n")
        self.parts.append(b"".join(out))
        self.last[ref] = self.mark

    def run(self, store: Path) -> None:
        env = {**os.environ, "GIT_DIR": str(store)}
        subprocess.run(["git", "fast-import", "--quiet", "--force"], input=b"".join(self.parts),
                       env=env, check=True)


def fingerprint(counts: list[int], files: int, hermes_every: int) -> str:
    """A name for a built store's shape (to reuse one kept with --keep)."""
    return hashlib.sha256(repr((counts, files, hermes_every)).encode()).hexdigest()[:12]
