"""Every request answered over stdio, and every answer sent.

The MCP SDK's stdio transport (mcp.server.stdio.stdio_server) reads each line with
pydantic; a line it cannot read (not JSON; JSON but no JSON-RPC message; a string with a
lone surrogate such as `\\udcff`, which pydantic's JSON reader refuses) becomes an
exception on its read stream, and the SDK's dispatcher
(mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher._dispatch) logs that at debug level and
drops it, since MCPServer sets no `on_stream_exception` observer: the client waits for
its own timeout. And an answer pydantic cannot write as JSON (a lone surrogate in a
tool's text) ends the transport's writer, and with it the server.

So `serve` runs the server's loop (what MCPServer.run_stdio_async runs) with this module
between it and the transport: a line the SDK could not read gets the JSON-RPC error it
calls for (parse error, invalid request, or invalid params naming where the surrogate
is), and an answer that cannot be written becomes an error for its request. Where a
later SDK lacks the loop used here, its own run_stdio_async serves, as before this
module, and says so on stderr.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
)
from pydantic import ValidationError

_SURROGATE = re.compile(r"[\ud800-\udfff]")
NAMES = ('a file name that is not UTF-8 is given as the tools show it, in double quotes '
         'with git\'s escapes ("caf\\351.txt")')


async def serve(server: MCPServer) -> None:
    lowlevel = getattr(server, "_lowlevel_server", None)
    if not (hasattr(lowlevel, "run") and hasattr(lowlevel, "create_initialization_options")):
        _say("this MCP SDK is not the one rewindfs was written for: a line it cannot read "
             "goes unanswered")
        await server.run_stdio_async()
        return
    async with stdio_server() as (lines, wire), wire:
        to_server, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_wire, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, lines, to_server, wire)
            tasks.start_soon(_write, from_server, wire)
            await lowlevel.run(from_wire, to_wire, lowlevel.create_initialization_options())


async def _read(lines: Any, server: Any, wire: Any) -> None:
    """The transport's messages on to the server; what it could not read answered here."""
    async with lines, server:
        async for item in lines:
            if isinstance(item, Exception):
                error = answer_unread(item)
                if error is not None:
                    await wire.send(SessionMessage(error))
                continue
            try:
                await server.send(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the server's loop ended


async def _write(answers: Any, wire: Any) -> None:
    """The server's messages on to the transport, each one known to encode as JSON."""
    async with answers:
        async for item in answers:
            try:
                item.message.model_dump_json(by_alias=True, exclude_unset=True)
            except Exception as exc:  # noqa: BLE001 - pydantic's error, whatever its kind
                item = _unsendable(item, exc)
                if item is None:
                    continue
            await wire.send(item)


def _unsendable(item: SessionMessage, exc: Exception) -> SessionMessage | None:
    message = item.message
    if isinstance(message, JSONRPCResponse | JSONRPCError):
        why = " ".join(str(exc).split())[:300]
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(
            code=INTERNAL_ERROR, message=f"the answer could not be written as JSON: {why}")))
    _say(f"a message to the client could not be written as JSON, and was not sent: {exc}")
    return None


def answer_unread(exc: Exception) -> JSONRPCError | None:
    """The JSON-RPC error for a line the transport could not read (`exc`), or None for a
    notification or a response (nothing answers those: said on stderr)."""
    if not isinstance(exc, ValidationError):
        _say(f"a line could not be read: {exc}")
        return _error(None, INVALID_REQUEST, "Invalid Request: the line could not be read")
    errors = exc.errors()
    raw = next((e["input"] for e in errors if e["type"] == "json_invalid"), None)
    if isinstance(raw, str):
        try:
            message = json.loads(raw)  # Python's reader takes lone surrogates
        except (ValueError, RecursionError):
            return _error(None, PARSE_ERROR, "Parse error: the line is not JSON")
    else:
        message = _top(errors)
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: a message is one JSON object "
                      "(batches are not part of MCP)")
    if "method" not in message or "id" not in message:
        _say("a notification or response that could not be read was dropped (nothing "
             "answers those)")
        return None
    ident = message["id"]
    if isinstance(ident, bool) or not isinstance(ident, str | int) or \
            (isinstance(ident, str) and _SURROGATE.search(ident)):
        ident = None
    where = _surrogate_at(message)
    if where is not None:
        return _error(ident, INVALID_PARAMS, f"Invalid params: {where} holds a lone "
                      f"surrogate (like \\udcff), which is not text: {NAMES}")
    return _error(ident, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request (an "
                  'object with "jsonrpc": "2.0", a string "method" and an "id" that is a '
                  "string or a number)")


def _top(errors: list[dict[str, Any]]) -> Any:
    """The message itself, as pydantic's errors about its top level hold it."""
    for error in errors:
        if error["type"] == "missing" and len(error["loc"]) == 2:
            return error["input"]
    for error in errors:
        if len(error["loc"]) == 1:
            return error["input"]
    return None


def _surrogate_at(value: Any, where: str = "", depth: int = 0) -> str | None:
    """Where in `value` a string (or a key) holds a lone surrogate (`params.arguments.path`)."""
    if depth > 64:
        return None
    if isinstance(value, str):
        return (where or "the message") if _SURROGATE.search(value) else None
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        name = _SURROGATE.sub("?", str(key))
        if isinstance(key, str) and _SURROGATE.search(key):
            return f"a key in {where or 'the message'}"
        found = _surrogate_at(inner, f"{where}.{name}" if where else name, depth + 1)
        if found is not None:
            return found
    return None


def _error(ident: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=message))


def _say(text: str) -> None:
    print(f"rewind mcp: {text}", file=sys.stderr, flush=True)
