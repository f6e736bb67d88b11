"""Anthropic Messages API (``POST /v1/messages``), streamed as SSE: Claude Code.

Shell moves become ``Bash`` tool calls, writes ``Write`` calls (absolute ``file_path``),
``Tool`` moves a call of the tool they name (an MCP server's, say).
A request without tools (Claude Code's own side calls) gets a short text answer.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from agentsim.script import Say, Script, Shell, Tool, Write
from agentsim.wire import Reply

_ids = itertools.count(1)


def tool_results(body: dict[str, Any]) -> int:
    return sum(
        1
        for message in body.get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def handle(path: str, body: dict[str, Any], script: Script) -> Reply:
    if path.split("?")[0].endswith("/count_tokens"):
        return Reply.json({"input_tokens": 10})
    move = script.move(tool_results(body)) if body.get("tools") else Say("ok")
    model = body.get("model", "claude-sim")
    if isinstance(move, Shell):
        block = {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": "Bash",
                 "input": {"command": move.command, "description": "scripted command"}}
    elif isinstance(move, Write):
        block = {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": "Write",
                 "input": {"file_path": script.abspath(move.path), "content": move.content}}
    elif isinstance(move, Tool):
        block = {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": move.name,
                 "input": move.input}
    else:
        block = {"type": "text", "text": move.text}
    stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
    message = {"id": f"msg_{next(_ids)}", "type": "message", "role": "assistant",
               "model": model, "content": [block], "stop_reason": stop,
               "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}
    if not body.get("stream"):
        return Reply.json(message)
    return Reply.sse(_stream(message, block))


def _stream(message: dict[str, Any], block: dict[str, Any]) -> list[tuple[str, Any]]:
    start = dict(message, content=[], stop_reason=None)
    if block["type"] == "tool_use":
        empty = dict(block, input={})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        empty = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": empty}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": message["stop_reason"],
                                     "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
