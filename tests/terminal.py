"""Run the real `rewind` on a pseudo-terminal, for what only a terminal gets: progress,
colour, the pager, prompts. Python's pty module; no timing assertions: `expect` waits
for text (with a generous deadline that only guards against a hang).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class PtyProcess:
    def __init__(self, argv: list[str], *, cwd: str | os.PathLike[str] | None = None,
                 env: dict[str, str] | None = None, columns: int = 100, rows: int = 30,
                 stdout_tty: bool = True):
        master, slave = os.openpty()
        import fcntl
        import struct
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.master = master
        self.output = b""
        self.stdout_file = None
        stdout = slave
        if not stdout_tty:
            self.stdout_file = subprocess.PIPE
            stdout = subprocess.PIPE
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=stdout,
                                     stderr=slave, start_new_session=True)
        os.close(slave)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side closed
            return False
        if not chunk:
            return False
        self.output += chunk
        return True

    def expect(self, pattern: str | bytes, timeout: float = 60) -> re.Match[bytes]:
        """Wait until the plain text (escapes removed) matches `pattern`."""
        rx = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        deadline = time.monotonic() + timeout
        while True:
            found = rx.search(self.plain)
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {pattern!r}; got {self.plain!r}")
            if not self._read(0.2) and self.proc.poll() is not None:
                # drain what is left, then give up
                while self._read(0.1):
                    pass
                found = rx.search(self.plain)
                if found:
                    return found
                raise AssertionError(f"process exited ({self.proc.returncode}) before "
                                     f"{pattern!r}; got {self.plain!r}")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            self._read(0.2)
            if time.monotonic() > deadline:
                os.killpg(self.proc.pid, signal.SIGKILL)
                raise AssertionError(f"timed out; output so far: {self.plain!r}")
        while self._read(0.1):
            pass
        os.close(self.master)
        return self.proc.returncode

    @property
    def plain(self) -> bytes:
        return ANSI.sub(b"", self.output)
