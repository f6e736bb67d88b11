"""The resident process: one per user and Hermes home, with everything imported, serving the
agents' hooks, the `rewind` command line and the watch of the projects it checkpoints.

It listens on a Unix socket in ``rewind-hooks/`` (a folder of this user's alone,
hooklog.private_dir; the peer's uid is checked both ways) and reads each connection's
first message itself (resident.wire: every field checked, a bad one answered with an
error and the process stays up). By its kind:

- a hook's tool call (no kind): a child is forked to settle it (hooks.helper.settle:
  "nothing changed", else the checkpoint). A checkpoint is "before" only if it was
  recorded before the hook answered the agent: the child first sends its pid and waits
  for the hook's go-ahead (hooks.helper.ask, abandon);
- `cli`: a `rewind` command, or an agent's hook (`entry`: resident.client.run_hook), with
  the client's working directory, environment and umask (resident.client): a child
  becomes that command as an exec would have started it (resident.forked), once the
  client's go-ahead brings its descriptors 0-2; its exit status goes back to the client;
  a client that goes away takes its command with it (SIGTERM);
- `since` and `captured`: a child's capture asking the watch what changed, and telling
  it what the capture gave (resident.source, resident.watch);
- `watch`: start watching a project, and take its first capture in the background
  (an agent's session has begun there: hooks.entry);
- `status`: the watch of each project, for `rewind doctor`.

Every child registers the watch as its captures' change source (store.capture.
changesource), so a checkpoint, a diff or a restore's pre-rollback snapshot reads only
what changed, and walks whenever the watch cannot be trusted.

It never serves stale code: the client's key names the rewindfs it runs (version,
interpreter, where it lives: a mismatch is answered "stale" and this process exits, the
next client starts a current one), and the directories of every file this process loaded
are watched too: any change there and it exits before serving again (without inotify:
each file's stat, hooks' loaded.Snapshot). It exits after ``REWIND_HOOK_HELPER_IDLE``
seconds (default 600) without a request. It starts isolated from every project
(hooks.isolation: `python -I`, cwd /, an environment without the agents' keys).
"""

from __future__ import annotations

import fcntl
import gc
import os
import select
import signal
import socket
import sys
from typing import Any

from rewindfs import portable
from rewindfs.hooks import hooklog
from rewindfs.resident import children, forked, wire

LOCK = "helper.lock"
DEFAULT_IDLE, MAX_IDLE = 600.0, 7 * 86400.0
READ_SECONDS = 5.0    # for a connection's first message


class Server:
    def __init__(self, folder: Any, listener: socket.socket, lock: int, key: str):
        from rewindfs.resident.loaded import Snapshot

        self.folder, self.listener, self.lock, self.key = folder, listener, lock, key
        self.me = os.getpid()
        self.loaded = Snapshot()
        self.watcher = _watcher(folder, self.loaded)
        self.poller = select.poll()
        self.poller.register(listener, select.POLLIN)
        self.running: dict[int, tuple[int, socket.socket]] = {}   # pidfd -> (pid, conn)
        self.clients: dict[int, int] = {}                          # conn fd -> pidfd
        self.served = 0   # commands run for clients (`status`: a test knows it was served)
        self.startup = forked.startup_env(dict(os.environ), tls=False)

    # -- the loop --------------------------------------------------------------------------

    def run(self, idle: float) -> None:
        while True:
            events = self.poller.poll(None if self.running else idle * 1000)
            if not events:
                return   # idle
            for fd, _mask in events:
                if fd == self.listener.fileno():
                    if self.accept() is False:
                        return
                elif fd in self.running:
                    self.ended(fd)
                elif fd in self.clients:
                    self.client_gone(fd)
            _reap()

    def accept(self) -> bool:
        conn, _ = self.listener.accept()
        keep = False
        try:
            if wire.peer_uid(conn) != os.getuid():
                return True
            conn.settimeout(READ_SECONDS)
            try:
                request, fds = wire.receive_with_fds(conn)
            except OSError:
                return True
            try:
                if request is None:
                    raise wire.BadRequest("bad request: not one message (resident.wire)")
                if not isinstance(request.get("code"), str):
                    raise wire.BadRequest("bad request: 'code' is not a string")
                if request["code"] != self.key:
                    wire.send(conn, {"ok": False, "stale": True})
                    return False   # the next client starts a current one
                changed = self.code_changed()
                if changed is not None:
                    hooklog.write("helper", hooklog.INFO,
                                  f"{changed} changed on disk since the helper started: "
                                  "exiting")
                    wire.send(conn, {"ok": False, "stale": True})
                    return False
                keep = self.dispatch(conn, request, fds)
            except wire.BadRequest as exc:
                wire.send(conn, {"ok": False, "error": str(exc)})
            finally:
                for fd in fds:
                    os.close(fd)
        except OSError:
            pass
        finally:
            if not keep:
                conn.close()
        return True

    def code_changed(self) -> str | None:
        if self.watcher is not None and self.watcher.code_seen():
            return self.watcher.code_changed or "a loaded file"
        return self.loaded.changed() if self.watcher is None else None

    def dispatch(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> bool:
        """Handle one request; True when `conn` stays open (a command is running)."""
        kind = request.get("kind")
        if kind is None:
            checked = self.checked_call(request)
            self.fork(conn, lambda: children.hook(conn, checked))
            return False
        if kind == "cli":
            checked = wire.check_cli(request)
            if forked.startup_env(checked["env"], tls=False) != self.startup:
                # Another locale or PYTHON* setting: a fork would not start as an exec
                # would. The client runs it itself.
                wire.send(conn, {"ok": False, "here": True})
                return False
            self.served += 1
            pid = self.fork(conn, lambda: children.cli(conn, checked, self.listener))
            pidfd = os.pidfd_open(pid) if portable.linux("pidfd") else None
            if pidfd is None:
                return False   # (no pidfds: the child sends its own exit status)
            self.running[pidfd] = (pid, conn)
            self.poller.register(pidfd, select.POLLIN)
            self.clients[conn.fileno()] = pidfd
            self.poller.register(conn, select.POLLRDHUP)
            return True
        if kind == "warm":   # a session began: its project watched, a first capture
            checked = self.checked_call({**request, "kind": None})
            self.fork(conn, lambda: children.warm(checked))
            wire.send(conn, {"ok": True})
            return False
        if kind in ("since", "captured", "watch", "status"):
            wire.send(conn, self.watch_request(kind, request))
            return False
        raise wire.BadRequest(f"bad request: unknown kind {str(kind)[:40]!r}")

    def checked_call(self, request: dict[str, Any]) -> dict[str, Any]:
        checked = wire.check(request, children.call_fields())
        if checked["home"] != str(hooklog.hermes_home()):
            raise wire.BadRequest("bad request: 'home' is not the Hermes home this "
                                  "process serves")
        return checked

    def fork(self, conn: socket.socket, child) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                self.listener.close()
                os.close(self.lock)  # held as long as the server lives, no longer
                child()
            finally:
                os._exit(0)
        return pid

    def ended(self, pidfd: int) -> None:
        pid, conn = self.running.pop(pidfd)
        self.poller.unregister(pidfd)
        self.clients.pop(conn.fileno(), None)
        try:
            self.poller.unregister(conn)
        except KeyError:
            pass
        os.close(pidfd)
        try:
            _, status = os.waitpid(pid, 0)
            wire.send(conn, {"exit": os.waitstatus_to_exitcode(status)})
        except OSError:
            pass
        conn.close()

    def client_gone(self, fd: int) -> None:
        """The client of a running command went away: the command goes too (as a
        terminal's hangup ends what runs in it)."""
        pidfd = self.clients.pop(fd)
        pid, conn = self.running[pidfd]
        self.poller.unregister(conn)
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        except ProcessLookupError:
            pass

    # -- the watch -------------------------------------------------------------------------

    def watch_request(self, kind: str, request: dict[str, Any]) -> dict[str, Any]:
        if self.watcher is None:
            return {"ok": False, "error": "this process watches nothing (no inotify)"}
        if kind == "status":
            return {"ok": True, "projects": self.watcher.status(), "served": self.served,
                    "pid": self.me}
        workdir = wire.checked_path(request, "workdir")
        if kind == "watch":
            self.watcher.plan(workdir, wire.checked_limits(request))
            return {"ok": True}
        limits = wire.checked_limits(request)
        if kind == "since":
            base, paths, token = self.watcher.plan(workdir, limits)
            return {"ok": True, "token": token, "base": None if base is None else {
                "tree": base.tree.hex(), "count": base.count, "skipped": base.skipped},
                "paths": [os.fsdecode(p) for p in paths]}
        token = request.get("token")
        if not (isinstance(token, list) and len(token) == 2
                and all(isinstance(t, int) for t in token)):
            raise wire.BadRequest("bad request: 'token' is not two numbers")
        self.watcher.captured(workdir, tuple(token), wire.checked_oid(request, "tree"),
                              wire.checked_int(request, "count"),
                              wire.checked_skipped(request), limits)
        return {"ok": True}


def _watcher(folder: Any, loaded: Any) -> Any:
    """The watch of projects and of this process's own code; None without inotify."""
    if not portable.linux("proc"):
        return None
    try:
        from rewindfs.resident.watch import Watcher
        from rewindfs.store import Layout

        cookies = hooklog.private_dir(folder / "cookies")
        base = os.fsencode(str(Layout.for_home().base))
        watcher = Watcher(cookies, hidden=(base,))
        watcher.watch_code(loaded.dirs())
        return watcher
    except (OSError, ImportError) as exc:
        hooklog.write("helper", hooklog.ERROR, f"no watch: {type(exc).__name__}: {exc}")
        return None


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(idle: float) -> None:
    folder = hooklog.ensure_dir()
    lock = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return   # another resident process serves this home
    os.ftruncate(lock, 0)   # no pid until it listens (running() says None till then)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    where = wire.address(fd, folder)
    if where is None:
        return   # a path too long for a socket, without /proc to shorten it
    try:
        os.unlink(where)
    except FileNotFoundError:
        pass
    key = wire.code_key()
    forked.preload(forked.RESIDENT_SKIPS)   # what every child needs, imported once
    from rewindfs.store.history import redaction

    redaction.prepare()   # the redactor's patterns, compiled once for every child
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        old = os.umask(0o077)
        try:
            listener.bind(where)
        finally:
            os.umask(old)
        listener.listen(64)
        server = Server(folder, listener, lock, key)
        gc.freeze()   # the children share these pages instead of copying them
        os.write(lock, str(os.getpid()).encode())
        try:
            server.run(idle)
        finally:
            try:
                os.unlink(where)
            except OSError:
                pass


def main() -> int:
    idle = hooklog.seconds("REWIND_HOOK_HELPER_IDLE", DEFAULT_IDLE, MAX_IDLE)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(idle)
    except Exception as exc:  # noqa: BLE001 - no one to tell but the log
        hooklog.write("helper", hooklog.ERROR, f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
