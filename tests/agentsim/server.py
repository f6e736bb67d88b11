"""One loopback HTTP server that plays a model provider for the real agent CLIs.

It listens on 127.0.0.1 on an ephemeral port, serves from a daemon thread, and stops by
itself at its deadline (or when the ``with`` block ends). Each provider's wire protocol lives
in its own module (anthropic, openai_responses, gemini, openai_chat); the server routes by
path, records every request (so a test can prove the agent really asked), and answers
anything it does not know harmlessly. It is also the agents' HTTP(S) proxy: a request meant
for any other host (telemetry, update checks) is refused and recorded as stray, so a test
never reaches an address off this machine.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from agentsim import anthropic, gemini, openai_chat, openai_responses
from agentsim.script import Move, Script
from agentsim.wire import Reply


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any          # parsed JSON, or the raw text when it is not JSON
    protocol: str      # "anthropic", "responses", "gemini", "chat", "other", "stray"


# Path -> protocol module; each module has `handle(path, body, script) -> Reply` and
# `tool_results(body) -> int`.
PROTOCOLS = {
    "anthropic": anthropic,
    "responses": openai_responses,
    "gemini": gemini,
    "chat": openai_chat,
}


def protocol_of(path: str) -> str:
    route = urlsplit(path).path
    if route.endswith("/messages") or "/messages/" in route:
        return "anthropic"
    if route.endswith("/responses"):
        return "responses"
    if "/models/" in route and ":" in route.rsplit("/", 1)[-1]:
        return "gemini"
    if route.endswith("/chat/completions"):
        return "chat"
    return "other"


@dataclass
class ModelServer:
    """``with ModelServer([Shell("rm x"), Say()]) as srv: ... srv.url ...``"""

    moves: list[Move]
    project: str = ""
    deadline: float = 300.0
    requests: list[Request] = field(default_factory=list)
    gate: Callable[[int], None] | None = None   # Script.gate

    def __post_init__(self) -> None:
        self.script = Script(list(self.moves), self.project, gate=self.gate)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> ModelServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="agentsim", daemon=True).start()
        # Stops by itself even if a test forgets (or dies before) the end of its block.
        self._timer = threading.Timer(self.deadline, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if self._timer:
            self._timer.cancel()
        if httpd:
            httpd.shutdown()
            httpd.server_close()

    @property
    def port(self) -> int:
        assert self._httpd, "server not running"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- what happened --------------------------------------------------------------
    def of(self, protocol: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.protocol == protocol]

    def stray(self) -> list[str]:
        """Hosts the agent tried to reach other than this server (refused)."""
        return [r.path for r in self.of("stray")]

    def describe(self) -> str:
        with self._lock:
            return "\n".join(f"{r.method} {r.path} [{r.protocol}]" for r in self.requests)

    # -- serving --------------------------------------------------------------------
    def answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        protocol = protocol_of(path) if method != "CONNECT" else "stray"
        with self._lock:
            self.requests.append(Request(method, path, headers, body, protocol))
        if protocol == "stray":
            return Reply(403, b"", "text/plain")
        module = PROTOCOLS.get(protocol)
        if module is None or method != "POST":
            # Model lists, health and version checks: an empty, well-formed answer.
            return Reply.json({"object": "list", "data": [], "models": []})
        return module.handle(path, body if isinstance(body, dict) else {}, self.script)


class _Handler(BaseHTTPRequestHandler):
    owner: ModelServer
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path
        if "://" in path:   # through the proxy: ours, or someone else's host
            parts = urlsplit(path)
            if parts.hostname not in ("127.0.0.1", "localhost") or parts.port != self.owner.port:
                self.owner.answer("CONNECT", parts.netloc, {}, b"")
                return self._send(Reply(403, b"", "text/plain"))
            path = parts.path + (f"?{parts.query}" if parts.query else "")
        reply = self.owner.answer(self.command, path, dict(self.headers.items()), raw)
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        if reply.content_type == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(reply.body)

    do_POST = do_GET = do_PUT = do_DELETE = do_HEAD = _serve

    def do_CONNECT(self) -> None:  # noqa: N802 - http.server's naming
        self.owner.answer("CONNECT", self.path, {}, b"")
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

