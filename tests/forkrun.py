"""`rewind` run as a fork of a process that has imported it already: the tests' runner.

Each `rewind` process pays Python's start-up and rewindfs's imports, 100-200 ms of CPU,
while most of the commands a test runs do a few ms of work: in ~2,000 processes that was
about a third of the suite's CPU (docs/performance.md, "The test suite"). Here one server
per test worker imports the CLI once and forks for each run, as hooks.helper does for an
agent's checkpoints. The child is set up as an exec of the launcher would leave it (its
arguments, environment, working directory and umask; descriptors 0-2 and no other;
libgit2's config search path for the new HOME) and runs the launcher's code: a real,
separate process running the real CLI against the real store, sharing only the imports.

A forked run ends as the interpreter would, but for the teardown of its modules (see
_exit): runs that check what is printed on the way out ask for that too (finalize=True).

A run may also start the click group itself (`entry="group"`: what click prints for
ARGS, with none of rewindfs.cli's quick answers before it), as
`python -c "from rewindfs.cli.group import run; run(ARGS, 'rewind')"` would: the tests
of the quick paths compare their answers with it.

What forks cannot stand in for execs the launcher as before:
- runs whose start-up is the subject (tests/cli's quick paths, import guards, Ctrl-C
  during start-up), and runs a test signals or finds by pid (but the foreground mounts
  started by `spawn`, below): those tests start their own processes;
- an environment that changes how Python itself starts (PYTHON*, the locale, the TLS
  certificates pygit2 reads at import) from the server's;
- every run, with REWIND_TEST_EXEC=1 in the tests' environment.

A second server (`Server(..., mount=True)`) has imported the mount too (rewindfs.fs,
pyfuse3, trio: ~250 ms of a mount's ~300 ms of CPU to start) and starts foreground mounts
a test asked for by `spawn`: a Popen-like handle to a process still running, signalled
through its pidfd. The CLI's server leaves the mount out: every child of a server pays
for the server's heap (the pages its exit writes to), and few runs are mounts.

The server runs as `python tests/forkrun.py SOCKET REWIND [mount]`, its stdin a pipe from
the test worker: it ends when the worker goes. One connection per run (a SOCK_SEQPACKET
socket): the request with the three descriptors, then the child's pid (with its pidfd),
then its exit status.
"""

from __future__ import annotations

import json
import locale
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from rewindfs.resident import forked

_startup_env = forked.startup_env
MESSAGE = 1 << 20  # the largest request: an environment, arguments and a directory


class Unavailable(Exception):
    """The server is gone (run() then execs)."""


class Spawned:
    """A forked run still going: what tests use of subprocess.Popen (pid, poll, wait,
    send_signal, kill). Signals go through the child's pidfd (never to a reused pid);
    its exit status comes from the server, which reaps it."""

    def __init__(self, args: list[str], conn: socket.socket, pid: int, pidfd: int):
        self.args = args
        self.conn = conn
        self.pid = pid
        self.pidfd = pidfd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            ready, _, _ = select.select([self.conn], [], [], 0)
            if ready:
                self._ended(self.conn.recv(64))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.conn.settimeout(timeout)
            try:
                self._ended(self.conn.recv(64))
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            signal.pidfd_send_signal(self.pidfd, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _ended(self, status: bytes) -> None:
        if not status:
            raise RuntimeError(f"the fork server is gone: {self.args} unaccounted for")
        self.returncode = int(status)
        self.conn.close()
        os.close(self.pidfd)


class Server:
    """The client side: one server process, started on first use, per test worker."""

    def __init__(self, rewind: str, env: dict[str, str], mount: bool = False):
        self.rewind = rewind
        self.env = env
        self.mount = mount
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.failed = False
        self.dir = Path(tempfile.mkdtemp(prefix="rewind-forkrun-"))
        self.path = str(self.dir / "socket")

    def usable(self, env: dict[str, str], cwd: str | os.PathLike[str] | None) -> bool:
        """Whether a fork starts as an exec would (else exec: a missing `cwd` is
        subprocess's error to raise)."""
        return (not self.failed and _startup_env(env) == _startup_env(self.env)
                and (cwd is None or os.path.isdir(cwd)))

    def _start(self) -> None:
        with self.lock:
            if self.proc is not None:
                return
            self.proc = subprocess.Popen(
                [sys.executable, __file__, self.path, self.rewind,
                 *(["mount"] if self.mount else [])], env=self.env,
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                cwd="/", start_new_session=True)
            assert self.proc.stdout is None and self.proc.stderr is not None
            ready = self.proc.stderr.readline()  # "ready" once it listens and has imported all
            if ready != b"ready\n":
                self.failed = True
                raise RuntimeError(f"the fork server did not start: {ready!r}")

    def run(self, args: list[str], cwd: str | os.PathLike[str] | None, env: dict[str, str],
            timeout: float | None, entry: str = "main", text: bool = True,
            stdout: int | None = None, finalize: bool = False) -> subprocess.CompletedProcess:
        """As subprocess.run(command(rewind, args, entry), capture_output=True, text=text,
        stdin=DEVNULL, cwd=cwd, env=env, timeout=timeout), with stdout=`stdout` when
        given (not captured then); `finalize`: the child's interpreter frees every
        module on its way out (see _exit); Unavailable when the server is gone."""
        with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err, \
                self._request(args, cwd, env, [stdin, out if stdout is None else stdout, err],
                              entry, finalize) as conn:
            try:
                pid = int(conn.recv(64))  # (the pidfd sent along is closed unread)
            except (OSError, ValueError) as exc:  # the server died: exec from now on
                self.failed = True
                raise Unavailable(exc) from None
            conn.settimeout(timeout)
            try:
                status = conn.recv(64)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                conn.settimeout(None)
                conn.recv(64)
                raise subprocess.TimeoutExpired(command(self.rewind, args, entry),
                                                timeout or 0, _read(out, text),
                                                _read(err, text)) from None
            return subprocess.CompletedProcess(command(self.rewind, args, entry), int(status),
                                               None if stdout is not None else _read(out, text),
                                               _read(err, text))

    def spawn(self, args: list[str], cwd: str | os.PathLike[str] | None,
              env: dict[str, str], stdio: list) -> Spawned:
        """As subprocess.Popen([rewind, *args], stdin=, stdout=, stderr= the three files
        of `stdio`, cwd=cwd, env=env); Unavailable when the server is gone."""
        conn = self._request(args, cwd, env, stdio)
        try:
            data, fds, _flags, _addr = socket.recv_fds(conn, 64, 1)
            return Spawned([self.rewind, *args], conn, int(data), fds[0])
        except (OSError, ValueError, IndexError) as exc:
            conn.close()
            self.failed = True
            raise Unavailable(exc) from None

    def _request(self, args: list[str], cwd: str | os.PathLike[str] | None,
                 env: dict[str, str], stdio: list, entry: str = "main",
                 finalize: bool = False) -> socket.socket:
        """A connection to the server that asked it to fork a run (`stdio`: its three
        files or descriptors)."""
        self._start()
        umask = os.umask(0o022)
        os.umask(umask)
        request = json.dumps({"args": args, "cwd": os.path.abspath(cwd or os.getcwd()),
                              "env": env, "umask": umask, "entry": entry,
                              "finalize": finalize}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(self.path)
            socket.send_fds(conn, [request],
                            [f if isinstance(f, int) else f.fileno() for f in stdio])
        except OSError as exc:  # the server died: exec from now on
            conn.close()
            self.failed = True
            raise Unavailable(exc) from None
        return conn

    def close(self) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # the server ends at EOF
            self.proc.wait(timeout=30)
            self.proc.stderr.close()  # type: ignore[union-attr]
        for leftover in self.dir.iterdir():
            leftover.unlink()
        self.dir.rmdir()


# This worker's server (conftest's fork_server sets it), for runners outside fixtures.
server: Server | None = None


ENTRIES = ("main", "group")  # the launcher's code; the click group run directly


def command(rewind: str, args: list[str], entry: str = "main") -> list[str]:
    """The command line an exec of `entry` runs."""
    if entry == "group":
        code = f"from rewindfs.cli.group import run; run({args!r}, 'rewind')"
        return [sys.executable, "-c", code]
    return [rewind, *args]


def run(rewind: str, args: list[str], *, cwd: str | os.PathLike[str] | None = None,
        env: dict[str, str], timeout: float | None = None, entry: str = "main",
        text: bool = True, stdout: int | None = None, finalize: bool = False
        ) -> subprocess.CompletedProcess:
    """subprocess.run(command(rewind, args, entry), capture_output=True, text=text,
    stdin=DEVNULL, ...), its output to the descriptor `stdout` instead when given (a
    pipe to another process): forked from this worker's server where it can stand in
    for the exec (`finalize`: see _exit)."""
    assert entry in ENTRIES, entry
    args = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    if server is not None and server.usable(env, cwd):
        try:
            return server.run(args, cwd, env, timeout, entry, text, stdout, finalize)
        except Unavailable as exc:
            print(f"forkrun: the fork server failed ({exc}); exec'ing rewind instead",
                  file=sys.stderr)
    return subprocess.run(command(rewind, args, entry), cwd=cwd, env=env,
                          stdout=subprocess.PIPE if stdout is None else stdout,
                          stderr=subprocess.PIPE, text=text, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _read(file, text: bool = True) -> str | bytes:
    """What a child wrote: its bytes, or as subprocess.run's text mode decodes them
    (universal newlines)."""
    file.seek(0)
    data = file.read()
    if not text:
        return data
    decoded = data.decode(locale.getpreferredencoding(False))
    return decoded.replace("\r\n", "\n").replace("\r", "\n")


# The server ---------------------------------------------------------------------------

def serve(path: str, rewind: str, mount: bool) -> None:
    """Accept runs until stdin ends; each is forked and reported. No `with` or `finally`
    here: the child unwinds this stack when its command exits."""
    forked.preload(() if mount else ("rewindfs.fs",), mount)
    import gc

    gc.freeze()  # the children share these pages instead of copying them on first touch
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    poller.register(0, select.POLLIN)
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    os.write(2, b"ready\n")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)  # nobody reads this pipe from now on: it must never fill up
    os.close(quiet)
    while True:
        for fd, _events in poller.poll():
            if fd == 0:
                return  # the test worker is gone
            if fd == listener.fileno():
                conn, _ = listener.accept()
                data, fds, _flags, _addr = socket.recv_fds(conn, MESSAGE, 3)
                pid = os.fork()
                if pid == 0:  # never returns
                    _child(json.loads(data), fds, rewind,
                           [listener, conn, *(c for _, c in running.values())])
                for received in fds:
                    os.close(received)
                pidfd = os.pidfd_open(pid)
                running[pidfd] = (pid, conn)
                poller.register(pidfd, select.POLLIN)
                socket.send_fds(conn, [str(pid).encode()], [pidfd])
                continue
            pid, conn = running.pop(fd)
            poller.unregister(fd)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            try:
                conn.send(str(os.waitstatus_to_exitcode(status)).encode())
            except OSError:
                pass  # the test gave up on it (a timeout)
            conn.close()


def _child(request: dict, fds: list[int], rewind: str, sockets: list[socket.socket]
           ) -> None:
    """Become `rewind ARGS` as exec would have started it, and run it."""
    forked.become(fds, request["cwd"], request["env"], request["umask"], sockets)
    try:
        if request["entry"] == "group":  # as `python -c "...; run(ARGS, 'rewind')"`
            sys.argv = ["-c"]
            from rewindfs.cli.group import run

            run(request["args"], "rewind")
        else:
            sys.argv = [rewind, *request["args"]]
            from rewindfs.cli import main

            main()
        code = 0
    except SystemExit as exc:
        code = forked.exit_code(exc)
        if code is None or request["finalize"]:
            raise  # the interpreter prints a message and exits, as the launcher's would
    forked.finish(code)


if __name__ == "__main__":
    # As the launcher's: its own folder first on the path (not this one's).
    sys.path[0] = os.path.dirname(sys.argv[2])
    serve(sys.argv[1], sys.argv[2], sys.argv[3:] == ["mount"])
