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

import subprocess
import threading

from rewindfs.store.layout import Layout
from rewindfs.store.maintenance.gitcli import git_binary, git_env


class BlobPipe:
    def __init__(self, layout: Layout):
        self.layout = layout
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def read(self, oid: str) -> bytes:
        """The blob's bytes. KeyError when git does not have it; StoreError when git
        cannot be run; OSError when the pipe broke twice in a row."""
        with self._lock:
            try:
                return self._ask(oid)
            except (OSError, EOFError):  # git exited (killed, or the store moved): once more
                self._stop()
            try:
                return self._ask(oid)
            except EOFError:
                self._stop()
                raise OSError(f"git cat-file ended while reading {oid[:8]}") from None

    def close(self) -> None:
        """End the git process (it holds the packs it read open); the next read starts
        a new one."""
        with self._lock:
            self._stop()

    def _ask(self, oid: str) -> bytes:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(oid.encode("ascii") + b"\n")
        proc.stdin.flush()
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
        data = proc.stdout.read(size + 1)  # the content, then a newline
        if len(data) != size + 1:
            raise EOFError
        if fields[1] != b"blob":
            raise KeyError(oid)
        return data[:size]

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [git_binary(), "cat-file", "--batch"], env=git_env(self.layout),
                cwd=self.layout.store, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL)
        return self._proc

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
