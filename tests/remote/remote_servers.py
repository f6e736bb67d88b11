"""Real git servers on 127.0.0.1 for the remote tests, and machines that use them.

* `git_daemon(base)`: `git daemon` serving every bare repository under `base` over
  git:// with pushes enabled.
* `GitHttp(base, user, password)`: smart HTTP (`git http-backend`, the CGI git ships)
  behind basic auth, in a thread of the test process; it can hold receive-pack
  requests so a test can prove two pushes were in flight at once.
* `Machine`: one HERMES_HOME and one HOME (its own ~/.gitconfig) running the real
  `rewind` CLI: two of them are two machines.

Every server listens on loopback only, on a port the kernel picks, and stops by
itself: daemons die with the test process (PR_SET_PDEATHSIG) and are stopped when
their block ends; the HTTP server is a thread of the test process.
"""

from __future__ import annotations

import base64
import ctypes
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import forkrun
from conftest import REWIND
from conftest import isolated_git_env as git_env


def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=git_env(), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def bare_repo(path: Path) -> Path:
    git("init", "-q", "--bare", str(path))
    return path


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGTERM when the test process dies, however it dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@contextmanager
def git_daemon(base: Path, log: Path) -> Iterator[str]:
    """git:// on 127.0.0.1 for every repository under `base`; yields the URL prefix."""
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
             f"--base-path={base}", "--export-all", "--enable=receive-pack",
             "--informative-errors", str(base)],
            env=git_env(), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            preexec_fn=die_with_parent)
    try:
        wait_listening(port, proc)
        yield f"git://127.0.0.1:{port}/"
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class GitHttp:
    """Smart HTTP with basic auth over `git http-backend`, serving repositories under `base`."""

    def __init__(self, base: Path, user: str, password: str, tls: Path | None = None):
        """With `tls` (a folder), https with a self-signed certificate written there
        (`self.certificate`, for the client's http.sslCAInfo)."""
        self.base = base
        self.expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status)
        self.hold_pushes = 0  # receive-pack POSTs held until this many are in flight
        self.gate: threading.Event | None = None  # when set: pushes wait for it to open
        self._in_flight = 0
        self._cond = threading.Condition()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server.serve(self)

            def do_POST(self) -> None:
                server.serve(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.scheme = "http"
        self.certificate: Path | None = None
        if tls is not None:
            self.certificate, key = self_signed(tls)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.certificate, key)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, repo: str) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/{repo}"

    def __enter__(self) -> GitHttp:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self.hold_pushes = 0
            self._cond.notify_all()
        if self.gate is not None:
            self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)

    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        path = urlsplit(handler.path)
        if handler.headers.get("Authorization") != self.expected:
            self.requests.append((handler.command, path.path, 401))
            handler.send_response(401)
            handler.send_header("WWW-Authenticate", 'Basic realm="rewind-test"')
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        body = _read_body(handler)
        pushing = handler.command == "POST" and path.path.endswith("/git-receive-pack")
        if pushing:
            self._hold()
        env = git_env(GIT_PROJECT_ROOT=str(self.base), GIT_HTTP_EXPORT_ALL="1",
                      REMOTE_USER="test", REQUEST_METHOD=handler.command, PATH_INFO=path.path,
                      QUERY_STRING=path.query,
                      CONTENT_TYPE=handler.headers.get("Content-Type", ""),
                      CONTENT_LENGTH=str(len(body)))
        for header, var in (("Content-Encoding", "HTTP_CONTENT_ENCODING"),
                            ("Git-Protocol", "GIT_PROTOCOL")):
            if handler.headers.get(header):
                env[var] = handler.headers[header]
        try:
            proc = subprocess.run(["git", "http-backend"], input=body, env=env,
                                  capture_output=True, timeout=120)
        finally:
            if pushing:
                with self._cond:
                    self._in_flight -= 1
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.requests.append((handler.command, path.path, status))
        try:
            handler.send_response(status)
            for name, value in headers:
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except OSError:
            pass  # the client is gone (a test killed it)

    def _hold(self) -> None:
        with self._cond:
            self._in_flight += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._in_flight >= self.hold_pushes, timeout=60)
        if self.gate is not None:
            self.gate.wait(60)


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (openssl)."""
    if shutil.which("openssl") is None:
        import pytest

        pytest.skip("openssl is not installed: no certificate for the https server")
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


class Machine:
    """A machine: its own HERMES_HOME and HOME (so its own ~/.gitconfig), running `rewind`."""

    def __init__(self, root: Path, name: str):
        self.name = name
        self.hermes = root / name / "hermes"
        self.home = root / name / "home"
        self.hermes.mkdir(parents=True)
        self.home.mkdir(parents=True)
        self.agent: str | None = None  # SSH_AUTH_SOCK of the ssh agent this machine uses

    @property
    def store(self) -> Path:
        return self.hermes / "checkpoints" / "store"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GIT_", "REWIND_", "SSH_"))}
        env.update(HERMES_HOME=str(self.hermes), HOME=str(self.home), LC_ALL="C.UTF-8")
        if self.agent:
            env["SSH_AUTH_SOCK"] = self.agent
        env.update(extra)
        return env

    def rewind(self, *args: object, cwd: Path | None = None, check: bool = True,
               timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
        proc = forkrun.run(REWIND, list(args), cwd=cwd, env=self.env(**env), timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"[{self.name}] rewind {' '.join(map(str, args))} exited "
                                 f"{proc.returncode}\nstdout: {proc.stdout}\n"
                                 f"stderr: {proc.stderr}")
        return proc

    def start(self, *args: object, **env: str) -> subprocess.Popen:
        """`rewind args` in its own process group (a test may kill the whole group)."""
        return subprocess.Popen([REWIND, *map(str, args)], env=self.env(**env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    def use_credentials(self, url: str, certificate: Path | None = None) -> None:
        """Credentials for `url` (`scheme://user:password@host:port`) from git's `store`
        helper, as a user would set it up (and the server's certificate, for https)."""
        creds = self.home / ".git-credentials"
        creds.write_text(url + "\n")
        os.chmod(creds, 0o600)
        self.git_config(("credential.helper", f"store --file={creds}"))
        if certificate is not None:
            self.git_config(("http.sslCAInfo", str(certificate)))

    def git_config(self, *pairs: tuple[str, str]) -> None:
        for key, value in pairs:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
            subprocess.run(["git", "config", "--global", key, value], check=True,
                           env={**env, "HOME": str(self.home)})


def wait_for(what: str, predicate: Callable[[], object], timeout: float = 60,
             step: float = 0.005) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Sshd:
    """`sshd` on 127.0.0.1 (a port of its own, host key and authorized keys in `folder`),
    and an `ssh-agent` holding the only key it accepts (the key file itself is deleted:
    only the agent can log in). Skips, saying why, where sshd cannot run."""

    def __init__(self, folder: Path):
        import pytest

        self.folder = folder
        sshd = shutil.which("sshd", path="/usr/sbin:/usr/local/sbin:" + os.environ["PATH"])
        for tool in ("ssh", "ssh-keygen", "ssh-agent", "ssh-add"):
            if shutil.which(tool) is None:
                pytest.skip(f"{tool} is not installed (openssh-client)")
        if sshd is None:
            pytest.skip("sshd is not installed (scripts/setup installs openssh-server as root)")
        if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
            try:
                os.mkdir("/run/sshd", 0o755)  # sshd's privilege separation directory
            except OSError as exc:
                pytest.skip(f"sshd needs /run/sshd and it cannot be made: {exc}")
        self.sshd = sshd
        self.procs: list[subprocess.Popen] = []
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.agent_socket = folder / "agent.sock"

    def __enter__(self) -> Sshd:
        f = self.folder
        for name in ("host", "client"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(f / name)],
                           check=True, capture_output=True)
        (f / "authorized_keys").write_text((f / "client.pub").read_text())
        config = f / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {f / 'host'}",
            f"PidFile {f / 'sshd.pid'}", f"AuthorizedKeysFile {f / 'authorized_keys'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes", "StrictModes no", "UsePAM no",
            "PermitRootLogin prohibit-password", "LogLevel ERROR", ""]))
        log = open(f / "sshd.log", "ab")
        self.procs.append(subprocess.Popen([self.sshd, "-D", "-e", "-f", str(config)],
                                           stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                           preexec_fn=die_with_parent))
        wait_listening(self.port, self.procs[0])
        self.procs.append(subprocess.Popen(["ssh-agent", "-D", "-a", str(self.agent_socket)],
                                           stdout=subprocess.DEVNULL, stderr=log,
                                           stdin=subprocess.DEVNULL, preexec_fn=die_with_parent))
        wait_for("ssh-agent's socket", self.agent_socket.exists, timeout=15)
        subprocess.run(["ssh-add", "-q", str(f / "client")], check=True, capture_output=True,
                       env={**os.environ, "SSH_AUTH_SOCK": str(self.agent_socket)})
        (f / "client").unlink()  # from now on only the agent holds the key
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            stop(proc)

    def client_config(self, home: Path) -> Path:
        """An ssh config for host `rewind-test` (what a user puts in ~/.ssh/config)."""
        import pwd

        path = home / ".ssh" / "config"
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_text("\n".join([
            "Host rewind-test", "  HostName 127.0.0.1", f"  Port {self.port}",
            f"  User {pwd.getpwuid(os.geteuid()).pw_name}",
            f"  UserKnownHostsFile {home / '.ssh' / 'known_hosts'}",
            "  StrictHostKeyChecking accept-new", "  BatchMode yes", ""]))
        return path
