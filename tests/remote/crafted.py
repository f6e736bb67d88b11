"""Remotes written by someone else: crafted with plain git (no rewindfs code writes them),
and the real `rewind` run against them with its time and memory bounded from outside.

* `Crafted(path)`: a bare repository and the objects a hostile pusher would put in it
  (blobs, trees by `git mktree`, commits by `git commit-tree` or `git fast-import`, a
  project's refs under `refs/rewind/m/<machine>/<h16>/` with its record);
* `bomb(width, depth)`: `depth` trees each naming the next `width` times;
* `bounded(argv, env, deadline)`: a process run to its end or killed at `deadline`,
  with its wall time and the max RSS of it and its children (os.wait4).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conftest import REWIND
from conftest import isolated_git_env as git_env

MACHINE = "a1b2c3d4e5f60718"  # the hostile pusher's machine id


def h16(n: int) -> str:
    return f"{n:016x}"


class Crafted:
    def __init__(self, path: Path, *, existing: bool = False):
        """A new bare repository at `path` (`existing`: the one there, as it is)."""
        self.path = path
        if not existing:
            self.git("init", "-q", "--bare", str(path), cwd=path.parent)

    def git(self, *args: str, cwd: Path | None = None, data: bytes | None = None,
            env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=cwd or self.path, input=data,
                              capture_output=True, timeout=600,
                              env=git_env(GIT_AUTHOR_NAME="x", GIT_AUTHOR_EMAIL="x@x",
                                          GIT_COMMITTER_NAME="x", GIT_COMMITTER_EMAIL="x@x",
                                          **(env or {})))
        if proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)}: {proc.stderr.decode()}")
        return proc.stdout.decode().strip()

    def blob(self, data: bytes) -> str:
        return self.git("hash-object", "-w", "--stdin", data=data)

    def zeros(self, size: int) -> str:
        """A blob of `size` zero bytes, streamed into git (never in this process)."""
        with subprocess.Popen(["head", "-c", str(size), "/dev/zero"],
                              stdout=subprocess.PIPE) as zeros:
            proc = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=self.path,
                                  stdin=zeros.stdout, capture_output=True, env=git_env(),
                                  timeout=600, check=True)
        return proc.stdout.decode().strip()

    def tree(self, entries: dict[str, tuple[str, str]]) -> str:
        """`git mktree` of name -> (mode, id)."""
        text = "".join(f"{mode} {'tree' if mode == '040000' else 'blob'} {oid}\t{name}\n"
                       for name, (mode, oid) in entries.items())
        return self.git("mktree", data=text.encode())

    def bomb(self, width: int, depth: int) -> str:
        """A tree standing for width**depth paths: `depth` trees, one blob."""
        oid, mode = self.blob(b"x\n"), "100644"
        for _ in range(depth):
            oid = self.tree({f"d{i:x}": (mode, oid) for i in range(width)})
            mode = "040000"
        return oid

    def commit(self, tree: str, message: str, parent: str | None = None,
               when: str | None = None) -> str:
        dates = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else {}
        return self.git("commit-tree", tree, "-m", message,
                        *(["-p", parent] if parent else []), env=dates)

    def fast_import(self, files: dict[str, bytes], message: str = "crafted",
                    when: str = "1700000000 +0000") -> str:
        """A commit of `files` (path -> bytes) made by one `git fast-import`."""
        ref = "refs/crafted/import"
        out = [f"commit {ref}\ncommitter x <x@x> {when}\ndata {len(message)}\n{message}\n"
               .encode()]
        for path, data in files.items():
            out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
        self.git("fast-import", "--quiet", data=b"".join(out))
        commit = self.git("rev-parse", ref)
        self.git("update-ref", "-d", ref)
        return commit

    def project(self, key: str, tip: str, record: dict | bytes | None = None,
                machine: str = MACHINE) -> str:
        """A pushed project: its checkpoints ref and its record (by default a normal one
        at /srv/<key>); returns its folder on the remote."""
        base = f"refs/rewind/m/{machine}/{key}/"
        self.git("update-ref", base + "checkpoints", tip)
        if record is None:
            record = {"format": 1, "h16": key, "machine": machine, "host": "sandbox",
                      "workdir": f"/srv/{key}", "created_at": 0}
        data = record if isinstance(record, bytes) else json.dumps(record).encode()
        meta = self.tree({"project.json": ("100644", self.blob(data))})
        self.git("update-ref", base + "meta", self.commit(meta, "rewindfs project record"))
        return base

    def refs(self) -> dict[str, str]:
        out = self.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/rewind/")
        return dict(line.split() for line in out.splitlines())


@dataclass
class Bounded:
    code: int | None  # None: killed at the deadline
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float  # of the process and every child it waited for


# Runs `rewind` and reports its wait4 rusage: a fresh, small process forks it, because a
# child's max RSS starts at its parent's (fork copies the memory map, and exec folds the
# old map's high-water mark in): forked by a big test worker, any rewind would look big.
LAUNCHER = """
import os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as out:
    out.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def bounded(args: list[object], env: dict[str, str], deadline: float,
            cwd: Path | None = None, sink: Callable[[bytes], object] | None = None
            ) -> Bounded:
    """`rewind args` run to its end or killed (with its process group) at `deadline`;
    the max RSS is wait4's, which counts the children it waited for (git) too. With
    `sink`, stdout is handed to it as it comes (a big `cat`), not kept."""
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    err_path = tmp / f"rewind-bounded-{os.getpid()}.err"
    report = tmp / f"rewind-bounded-{os.getpid()}.report"
    report.unlink(missing_ok=True)
    with open(err_path, "wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(report), REWIND,
                                 *map(str, args)], env=env, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        kept: list[bytes] = []
        reader = threading.Thread(target=_read, args=(proc.stdout, sink or kept.append))
        reader.start()
        try:
            proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            pass
        seconds = time.monotonic() - started
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # at the deadline, or what it left behind
        except OSError:
            pass
        proc.wait()
        reader.join()
    try:
        code, rss = (int(n) for n in report.read_text().split()) if report.exists() \
            else (None, 0)
        return Bounded(code, b"".join(kept).decode(errors="replace"),
                       err_path.read_text(errors="replace"), seconds, rss / 1024)
    finally:
        err_path.unlink(missing_ok=True)
        report.unlink(missing_ok=True)


def _read(stream, sink: Callable[[bytes], object]) -> None:
    while chunk := stream.read1(1 << 20):
        sink(chunk)
    stream.close()
