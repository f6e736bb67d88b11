"""Gemini API (``POST /v1beta/models/M:streamGenerateContent?alt=sse``): Gemini CLI.

Shell moves become ``run_shell_command`` function calls, writes ``write_file`` calls
(absolute ``file_path``). ``generateContent`` (Gemini CLI's side calls, e.g. its
next-speaker check) and ``countTokens`` get harmless answers.
"""

from __future__ import annotations

import json
from typing import Any

from agentsim.script import Say, Script, Shell, Write
from agentsim.wire import Reply


def tool_results(body: dict[str, Any]) -> int:
    """Function responses in the conversation, each call counted once (a resumed session's
    history repeats a response: Gemini CLI 0.61.0 sends it twice)."""
    seen: set[object] = set()
    count = 0
    for content in body.get("contents", []):
        for n, part in enumerate(content.get("parts") or [] if isinstance(content, dict) else []):
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                key = part["functionResponse"].get("id") or (id(content), n)
                count += key not in seen
                seen.add(key)
    return count


def handle(path: str, body: dict[str, Any], script: Script) -> Reply:
    method = path.split("?")[0].rsplit(":", 1)[-1]
    if method == "countTokens":
        return Reply.json({"totalTokens": 10})
    if method != "streamGenerateContent":
        # A side call that wants JSON back (next speaker, loop checks): the user speaks next.
        text = json.dumps({"reasoning": "scripted", "next_speaker": "user"})
        return Reply.json(_chunk({"text": text}))
    move = script.move(tool_results(body)) if body.get("tools") else Say("ok")
    if isinstance(move, Shell):
        part = {"functionCall": {"name": "run_shell_command",
                                 "args": {"command": move.command,
                                          "description": "scripted command"}}}
    elif isinstance(move, Write):
        part = {"functionCall": {"name": "write_file",
                                 "args": {"file_path": script.abspath(move.path),
                                          "content": move.content}}}
    else:
        part = {"text": move.text}
    return Reply.sse([(None, _chunk(part))])


def _chunk(part: dict[str, Any]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": "gemini-sim"}
