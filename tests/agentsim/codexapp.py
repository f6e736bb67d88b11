"""Codex's own view of its hooks, from its app-server (`codex app-server`, JSON-RPC over
stdio, no network): the hooks it found for a directory with their trust status, and trusting
one the way its `/hooks` screen does (a `config/batchWrite` of ``hooks.state``)."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from typing import Any

from agentsim.clis import Agent, binary, missing


class CodexApp:
    def __init__(self, agent: Agent, timeout: float = 60) -> None:
        exe = binary("codex")
        assert exe, missing("codex")
        self.agent, self.timeout, self.ids = agent, timeout, 0
        # Its own process group: on a Node without process.execve, `codex` is a Node
        # wrapper with the native server as its child, which a kill of the wrapper alone
        # would leave running on the Codex home beside the next test's server.
        self.proc = subprocess.Popen(
            [str(exe), "app-server"], cwd=agent.project, env=agent.env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True)
        assert self.proc.stdout
        # Read with os.read only, never through proc.stdout's buffer (see _line).
        self._out = self.proc.stdout.fileno()
        self._read = b""   # what came from the server past the last whole line taken
        try:
            self.call("initialize", {"clientInfo": {"name": "rewindfs-tests", "version": "1"}})
            self._send({"jsonrpc": "2.0", "method": "initialized"})
        except BaseException:
            self.__exit__()
            raise

    def __enter__(self) -> CodexApp:
        return self

    def __exit__(self, *exc: object) -> None:
        # End of input is the app-server's own way to stop (a clean exit in well under a
        # second here); the group kill is for one that does not.
        assert self.proc.stdin and self.proc.stdout
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)   # not reaped yet: the group is ours
            self.proc.wait(timeout=30)
        self.proc.stdout.close()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _line(self, method: str, deadline: float) -> bytes:
        """The server's next line. Its answers and notifications come in whatever chunks
        the pipe holds, so the lines already read are taken before waiting on the pipe
        again (a buffered readline after select loses an answer read with the line before
        it: the pipe is then empty and select waits out the deadline)."""
        with selectors.DefaultSelector() as sel:
            sel.register(self._out, selectors.EVENT_READ)
            while b"\n" not in self._read:
                left = deadline - time.monotonic()
                assert left > 0 and sel.select(left), f"codex app-server: no answer to {method}"
                chunk = os.read(self._out, 1 << 16)
                assert chunk, f"codex app-server exited ({self.proc.poll()}) before {method}"
                self._read += chunk
        line, _, self._read = self._read.partition(b"\n")
        return line

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        self._send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        deadline = time.monotonic() + self.timeout
        while True:
            answer = json.loads(self._line(method, deadline))
            if answer.get("id") == self.ids:
                assert "error" not in answer, answer
                return answer["result"]

    def hooks(self) -> list[dict[str, Any]]:
        """The hooks Codex loads in the agent's project (key, command, currentHash,
        trustStatus: trusted / untrusted / modified, enabled...)."""
        [found] = self.call("hooks/list", {"cwds": [str(self.agent.project)]})["data"]
        assert not found["errors"], found
        return found["hooks"]

    def trust(self, hook: dict[str, Any]) -> None:
        """What trusting `hook` in Codex's /hooks writes: its current hash, in the user's
        config.toml."""
        self.call("config/batchWrite", {"edits": [{
            "keyPath": "hooks.state", "mergeStrategy": "upsert",
            "value": {hook["key"]: {"trusted_hash": hook["currentHash"]}}}]})
