"""OpenAI chat completions (``POST .../chat/completions``), streamed as SSE: OpenCode and Kilo
through ``@ai-sdk/openai-compatible``.

Shell moves become ``bash`` tool calls, writes ``write`` calls (absolute ``filePath``). A
request without tools (title generation) gets a short text answer.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from agentsim.script import Say, Script, Shell, Write
from agentsim.wire import Reply

_ids = itertools.count(1)


def tool_results(body: dict[str, Any]) -> int:
    messages = body.get("messages", [])
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")


def finished_turns(body: dict[str, Any]) -> int:
    """Turns of a continued session before this one: every user message but the last."""
    messages = body.get("messages", [])
    return max(0, sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user")
               - 1)


def handle(path: str, body: dict[str, Any], script: Script) -> Reply:
    move = script.move(tool_results(body), finished_turns(body)) if body.get("tools") \
        else Say("Scripted session")
    n = next(_ids)
    if isinstance(move, Shell):
        call = ("bash", {"command": move.command, "description": "scripted command"})
    elif isinstance(move, Write):
        call = ("write", {"filePath": script.abspath(move.path), "content": move.content})
    else:
        call = None
    base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "m1")}
    if call:
        delta = {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": f"call_{n}", "type": "function",
             "function": {"name": call[0], "arguments": json.dumps(call[1])}}]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": move.text}
        finish = "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if not body.get("stream"):
        message = {k: v for k, v in delta.items() if k != "tool_calls" or call}
        return Reply.json({"id": base["id"], "object": "chat.completion",
                               "created": base["created"], "model": base["model"],
                               "choices": [{"index": 0, "message": message,
                                            "finish_reason": finish}], "usage": usage})
    return Reply.sse([
        (None, dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
        (None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
        (None, dict(base, choices=[], usage=usage)),
        (None, "[DONE]"),
    ])
