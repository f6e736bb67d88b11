"""A minimal MCP client for the tests: the real `rewind mcp` process, spoken to in
newline-delimited JSON-RPC over its stdin and stdout (the stdio transport), every read
bounded by a deadline, the process ended when the `with` block ends."""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from conftest import REWIND

PROTOCOL = "2025-06-18"  # what Claude Code 2.1 asks for
DEADLINE = 60.0


class McpError(AssertionError):
    pass


class Server:
    """`with Server(env, cwd, "--allow-restore") as srv: srv.call("list_checkpoints")`"""

    def __init__(self, env: dict[str, str], cwd: Path, *args: str):
        self.env, self.cwd, self.args = env, cwd, args
        self.ids = itertools.count(1)
        self.proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self.initialized: dict[str, Any] = {}

    def __enter__(self) -> Server:
        self.proc = subprocess.Popen([REWIND, "mcp", *self.args], cwd=self.cwd, env=self.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.initialized = self.request("initialize", {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "rewindfs-tests", "version": "1"}})
        self.notify("notifications/initialized")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        try:
            proc.stdin.close()
            return proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise McpError("the server did not end when its stdin closed") from None
        finally:
            self.stderr = proc.stderr.read().decode(errors="replace")
            proc.stdout.close()
            proc.stderr.close()
            self.proc = None

    # -- the wire ---------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        # json.dumps writes a lone surrogate as the escape `\udcff`, as a client would.
        self.send_raw(json.dumps(message).encode())

    def send_raw(self, line: bytes) -> None:
        """One line as it is (whatever it holds), then the newline that ends it."""
        assert self.proc is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def receive(self, deadline: float = DEADLINE) -> dict[str, Any]:
        assert self.proc is not None
        end = time.monotonic() + deadline
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise McpError(f"no answer within {deadline} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise McpError("the server closed its stdout: "
                               + self.proc.stderr.read().decode(errors="replace")[-2000:])
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The result of one request (a JSON-RPC error raises McpError)."""
        message = self.answer(method, params)
        if "error" in message:
            raise McpError(f"{method}: {message['error']}")
        return message["result"]

    def answer(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole answer to one request: its result or its JSON-RPC error."""
        ident = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": ident, "method": method,
                   **({"params": params} if params is not None else {})})
        return self.answer_to(ident)

    def answer_to(self, ident: int | str | None) -> dict[str, Any]:
        """The next message answering `ident` (None: an error the server could not tie to
        a request); notifications and log messages in between are skipped."""
        while True:
            message = self.receive()
            if message.get("id") == ident and ("result" in message or "error" in message):
                return message

    # -- tools ------------------------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        return self.request("tools/list")["tools"]

    def call_result(self, name: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def call(self, name: str, **arguments: Any) -> str:
        """A tool's text; an error result raises McpError with its text."""
        result = self.call_result(name, **arguments)
        text = "\n".join(c["text"] for c in result["content"] if c["type"] == "text")
        if result.get("isError"):
            raise McpError(text)
        return text

    def error(self, name: str, **arguments: Any) -> str:
        """The text of a call that must end in an error result."""
        result = self.call_result(name, **arguments)
        text = "\n".join(c["text"] for c in result["content"] if c["type"] == "text")
        assert result.get("isError"), f"{name} did not fail: {text}"
        return text
