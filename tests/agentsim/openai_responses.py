"""OpenAI Responses API (``POST .../responses``), streamed as SSE: Codex.

Shell moves become ``exec_command`` function calls; writes become an ``apply_patch`` custom
(freeform) tool call adding the file. A request without tools gets a short text answer.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from agentsim.script import Say, Script, Shell, Write
from agentsim.wire import Reply

_ids = itertools.count(1)
_RESULT_TYPES = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def tool_results(body: dict[str, Any]) -> int:
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(1 for item in items if isinstance(item, dict) and item.get("type") in _RESULT_TYPES)


def _tool(body: dict[str, Any], name: str) -> str | None:
    """The type ("function", "custom") of the request's tool called `name`, if offered."""
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name") == name:
            return tool.get("type")
    return None


def add_file_patch(path: str, content: str) -> str:
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def handle(path: str, body: dict[str, Any], script: Script) -> Reply:
    move = script.move(tool_results(body)) if body.get("tools") else Say("ok")
    n = next(_ids)
    if isinstance(move, Shell):
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                "name": "exec_command", "arguments": json.dumps({"cmd": move.command})}
    elif isinstance(move, Write) and _tool(body, "apply_patch") == "custom":
        item = {"type": "custom_tool_call", "id": f"ctc_{n}", "call_id": f"call_{n}",
                "name": "apply_patch", "input": add_file_patch(move.path, move.content)}
    elif isinstance(move, Write) and _tool(body, "apply_patch") == "function":
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                "name": "apply_patch",
                "arguments": json.dumps({"input": add_file_patch(move.path, move.content)})}
    elif isinstance(move, Write):
        # Without an apply_patch tool (models Codex has no metadata for), Codex still
        # intercepts an apply_patch command given to its shell tool.
        patch = add_file_patch(move.path, move.content)
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})}
    else:
        item = _message(n, move.text)
    response = {"id": f"resp_{n}", "object": "response", "status": "completed",
                "model": body.get("model", "codex-sim"), "output": [item],
                "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": 15}}
    created = dict(response, status="in_progress", output=[])
    return Reply.sse([
        ("response.created", {"type": "response.created", "response": created}),
        ("response.output_item.added", {"type": "response.output_item.added",
                                        "output_index": 0, "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done",
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": response}),
    ])


def _message(n: int, text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
