"""Reading big blobs through a long-lived `git cat-file --batch`, without holding the GIL.

pygit2 keeps the GIL for the whole of one object read, so inflating a 10 MiB blob
in the mount (~75 ms here) would hold up every other request it serves. git reads
the blob in its own process while this one waits on a pipe, which releases the
GIL: this is the one read where spawning git beats libgit2 in process. Small
blobs stay with libgit2 (a pipe round trip costs more than inflating them).

One git process per reader, one request at a time (a lock); a reader that died
or went wrong is replaced on the next read.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from rewindfs.store.objects.gitcli import git_binary, git_env
from rewindfs.store.objects.layout import Layout

CHUNK = 1024 * 1024
PIPE_BUFFER = 1024 * 1024  # git's answers buffered: the pipe's size, and ours reading it
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux
BATCH = 256  # oids written at once: well under a pipe's 64 KiB, so git never blocks us
# git streams a packed blob (never whole in its memory) only above this; its default,
# 512 MiB, would let every blob below it be whole in git's memory, and we read big
# blobs through git to keep them out of ours.
STREAMED = "core.bigFileThreshold=8m"


class BlobPipe:
    """`alternates`: more object folders git may read from (another agent's snapshots,
    store.foreign); they are named to git through the environment, never written down.
    Before the store exists, git runs in an empty repository of its own instead (a
    private temporary directory, removed by close)."""

    def __init__(self, layout: Layout, alternates: Sequence[Path] = ()):
        self.layout = layout
        self.alternates = tuple(alternates)
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stand_in: Path | None = None

    def read(self, oid: str) -> bytes:
        """The blob's bytes. KeyError when git does not have it; StoreError when git
        cannot be run; OSError when the pipe broke twice in a row."""
        chunks: list[bytes] = []
        self.copy(oid, chunks.append)
        return b"".join(chunks)

    def copy(self, oid: str, sink: Callable[[bytes], object]) -> int:
        """Hand the blob to `sink` in pieces of at most CHUNK bytes (a big blob is never
        whole in memory); its size. Errors as for read(). A git that died before
        answering is replaced once; one that dies halfway is an OSError (`sink` has
        part of the blob)."""
        fed = [False]

        def feed(data: bytes) -> None:
            fed[0] = True
            sink(data)

        with self._lock:
            try:
                return self._ask(oid, feed)
            except (OSError, EOFError):  # git exited (killed, or the store moved)
                self._stop()
                if fed[0]:
                    raise OSError(f"git cat-file ended while reading {oid[:8]}") from None
            try:
                return self._ask(oid, feed)
            except EOFError:
                self._stop()
                raise OSError(f"git cat-file ended while reading {oid[:8]}") from None

    def read_many(self, oids: list[str],
                  deliver: Callable[[str, bytes | None], object]) -> None:
        """deliver(oid, bytes) for each blob in turn (None: git does not have it), asked
        in batches so git reads and inflates the next while this process takes the last.
        Raises OSError if git ends halfway; the pipe is replaced on the next use."""
        with self._lock:
            for start in range(0, len(oids), BATCH):
                batch = oids[start:start + BATCH]
                try:
                    proc = self._start()
                    assert proc.stdin is not None
                    proc.stdin.write("".join(f"{oid}\n" for oid in batch).encode("ascii"))
                    proc.stdin.flush()
                    for oid in batch:
                        chunks: list[bytes] = []
                        try:
                            self._answer(oid, chunks.append)
                        except KeyError:
                            deliver(oid, None)
                            continue
                        deliver(oid, b"".join(chunks))
                except (OSError, EOFError):
                    self._stop()
                    raise OSError("git cat-file ended during a batch read") from None

    def close(self) -> None:
        """End the git process (it holds the packs it read open); the next read starts
        a new one."""
        with self._lock:
            self._stop()
            if self._stand_in is not None:
                shutil.rmtree(self._stand_in, ignore_errors=True)
                self._stand_in = None

    def _ask(self, oid: str, sink: Callable[[bytes], object]) -> int:
        proc = self._start()
        assert proc.stdin is not None
        proc.stdin.write(oid.encode("ascii") + b"\n")
        proc.stdin.flush()
        return self._answer(oid, sink)

    def _answer(self, oid: str, sink: Callable[[bytes], object]) -> int:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        header = proc.stdout.readline()
        if not header.endswith(b"\n"):
            raise EOFError
        fields = header.split()
        if len(fields) != 3:  # "<oid> missing" (or any other complaint)
            raise KeyError(oid)
        try:
            size = int(fields[2])
        except ValueError:
            raise EOFError from None  # not git's answer: start over
        if fields[1] != b"blob":
            self._skip(size + 1)
            raise KeyError(oid)
        left = size
        while left:
            data = proc.stdout.read(min(left, CHUNK))
            if not data:
                raise EOFError
            sink(data)
            left -= len(data)
        if proc.stdout.read(1) != b"\n":  # git ends each answer with a newline
            raise EOFError
        return size

    def _skip(self, count: int) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        while count:
            data = self._proc.stdout.read(min(count, CHUNK))
            if not data:
                raise EOFError
            count -= len(data)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            env = git_env(self.layout)
            git_dir = self.layout.store
            if self.alternates:
                env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(map(str,
                                                                              self.alternates))
                if not (git_dir / "objects").is_dir():
                    git_dir = env["GIT_DIR"] = str(self._empty_repository())
            self._proc = subprocess.Popen(
                [git_binary(), "-c", STREAMED, "cat-file", "--batch"], env=env,
                cwd=git_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, bufsize=PIPE_BUFFER)
            assert self._proc.stdout is not None
            try:  # git inflates further ahead, and each side wakes the other less often
                fcntl.fcntl(self._proc.stdout.fileno(), F_SETPIPE_SZ, PIPE_BUFFER)
            except OSError:
                pass  # over the system's limit: the default 64 KiB pipe
        return self._proc

    def _empty_repository(self) -> Path:
        """A repository with nothing in it (what git needs to run in), made once."""
        if self._stand_in is None:
            path = Path(tempfile.mkdtemp(prefix="rewindfs-git-"))  # private: mode 0700
            for folder in ("objects", "refs"):
                (path / folder).mkdir()
            (path / "HEAD").write_text("ref: refs/heads/main\n")
            self._stand_in = path
        return self._stand_in

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
