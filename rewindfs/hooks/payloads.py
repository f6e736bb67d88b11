"""Each agent's hook payload, read into one shape: what tool is about to run, where, for which
session and turn.

Facts (each checked against the real CLI, see tests/hooks/test_hooks_agents.py):
- Claude Code PreToolUse: session_id, prompt_id, cwd, tool_name (Bash, Write, Edit, ...),
  tool_input.command / tool_input.file_path, tool_use_id; PostToolUse (PostToolUseFailure
  for a tool that failed) the same, after the call.
- Codex PreToolUse and PostToolUse: session_id, turn_id, cwd, tool_name "Bash" for its
  shell tool (an apply_patch given to the shell arrives as a Bash command),
  tool_input.command, tool_use_id.
- Gemini CLI BeforeTool and AfterTool: session_id, cwd, timestamp, tool_name
  (run_shell_command, write_file, replace), tool_input; no turn id, so BeforeAgent (one per
  prompt) names the turn; no call id either: a call is known by its tool and input.
- Cursor (documented, not run: its CLI needs Cursor's servers) beforeShellExecution and
  afterShellExecution: conversation_id, generation_id, command, cwd, workspace_roots;
  preToolUse and postToolUse: tool_name, tool_input, tool_use_id.
- OpenCode and Kilo: our plugin's `tool.execute.before` sends tool, sessionID, callID, args,
  directory and the turn (the last user message it saw); `tool.execute.after` the same
  with phase "after".

A call's `key` pairs its after event with its before (the agent's id of the call, else
its tool and a digest of what it runs or writes); `call` names the step (unique: for a
call without an id, the key and the time).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # (typing itself: milliseconds of every hook call)
if TYPE_CHECKING:  # (typing: milliseconds of every hook call)
    from typing import Any

AGENTS = ("claude-code", "codex", "gemini", "cursor", "opencode", "kilo")

SHELL, WRITE, TURN, OTHER = "shell", "write", "turn", "other"
BEFORE, AFTER = "before", "after"   # a tool call about to run, or done

# Tool names per agent: the shell tool, and the tools that write files.
SHELL_TOOLS = {"Bash", "Shell", "run_shell_command", "bash", "shell", "exec_command",
               "local_shell", "terminal", "run_terminal_cmd"}
WRITE_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch", "write_file",
               "replace", "edit", "write", "multiedit", "patch", "edit_file", "search_replace",
               "delete_file", "Delete"}
PATCH_PROGRAMS = ("apply_patch", "applypatch")
# The lines of Codex's patch format that name a file (the patch's text, with the file's
# new contents, stays out of the checkpoint's reason).
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


class ToolCall:
    """One tool call about to run, or done (a plain class: dataclasses would cost every
    hook call the import of inspect)."""

    __slots__ = ("agent", "kind", "tool", "command", "cwd", "session", "turn", "call",
                 "answer", "phase", "key", "files")

    def __init__(self, agent: str, kind: str, tool: str, command: str, cwd: str,
                 session: str, turn: str, call: str, answer: str = "", phase: str = BEFORE,
                 key: str = "", files: str = ""):
        self.agent, self.kind, self.tool = agent, kind, tool   # kind: SHELL, WRITE, TURN, OTHER
        self.command = command   # the shell command, or the files the write tool names
        self.cwd, self.session, self.turn = cwd, session, turn
        self.call = call         # the tool call's id (a step id)
        self.answer = answer     # what the agent's protocol wants on stdout (Cursor: allow)
        self.phase = phase       # BEFORE or AFTER the call
        self.key = key or call   # pairs the call's after event with its before
        # A write tool's files as it names them (a JSON list; "": not known), the only
        # files such a call can change.
        self.files = files


class Unknown(ValueError):
    """A payload this agent does not send: logged and ignored."""


def parse(agent: str, data: Any) -> ToolCall:
    if agent not in AGENTS:
        raise Unknown(f"unknown agent {agent!r} (one of {', '.join(AGENTS)})")
    if not isinstance(data, dict):
        raise Unknown(f"{agent}: payload is not a JSON object")
    return _PARSERS[agent](agent, data)


def head(raw: bytes) -> dict[str, Any]:
    """The members of a JSON object cut short (a payload too large to keep whole, or one
    that did not come whole in time), as far as each is whole: agents send the cwd and
    the ids before the tool's input, so a call too large to read can still be named."""
    import json

    text, decoder, out = raw.decode("utf-8", "replace"), json.JSONDecoder(), {}
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return out
    at += 1
    while True:
        at = _skip(text, at)
        try:
            key, at = decoder.raw_decode(text, at)
            at = _skip(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                return out
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
        except ValueError:
            return out
        out[key] = value
        at = _skip(text, at)
        if not text.startswith(",", at):
            return out
        at += 1


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _text(data: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return ""


def _tool(agent: str, data: dict[str, Any], tool: str, tool_input: Any, *, cwd: str,
          session: str, turn: str, call: str, answer: str = "", phase: str = BEFORE
          ) -> ToolCall:
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    command = _text(tool_input, "command", "cmd")
    if not cwd:
        raise Unknown(f"{agent}: payload has no cwd")
    files = ""
    if tool in SHELL_TOOLS and command:
        kind = SHELL
        if command.lstrip().startswith(PATCH_PROGRAMS):   # Codex's apply_patch via its shell
            named = _patched(command)
            kind, tool, command, files = WRITE, "apply_patch", _files(cwd, named), _listed(named)
    elif tool in WRITE_TOOLS:
        kind = WRITE
        path = _text(tool_input, "file_path", "filePath", "path", "target_file", "notebook_path")
        named = [path] if path else _patched(
            _text(tool_input, "input", "patch", "command", "patchText"))
        command, files = _files(cwd, named), _listed(named)
    else:
        kind = OTHER
    key = call or f"{tool}-{_digest(tool, command)}"
    if not call:
        call = key if phase == AFTER else f"{key}-{time.time_ns()}"
    return ToolCall(agent, kind, tool, command, cwd, session or "unknown",
                    turn or session or "unknown", call, answer, phase, key, files)


MAX_FILES = 2048   # characters of a write's list of files kept (more: not known)


def _listed(paths: list[str]) -> str:
    import json

    text = json.dumps([p for p in paths if p])
    return text if len(text) <= MAX_FILES and paths else ""


def _digest(tool: str, command: str) -> str:
    """What names a call the agent gives no id: its tool and what it runs or writes."""
    try:  # sha256 without hashlib's OpenSSL (the hook's start-up)
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import sha256
    return sha256(f"{tool}\0{command}".encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _patched(patch: str) -> list[str]:
    """The files a patch in Codex's format adds, updates, deletes or moves to."""
    return [line[len(head):].strip() for line in patch.splitlines()
            for head in PATCH_HEADERS if line.startswith(head)]


def _files(cwd: str, paths: list[str]) -> str:
    """The files a write tool names, for the checkpoint's reason: relative to `cwd` when
    inside it."""
    inside = cwd.rstrip("/") + "/"
    return ", ".join(p[len(inside):] if p.startswith(inside) else p for p in paths if p)


# Events that begin a session or a turn: the resident process watches the project and takes
# its first checkpoint in the background (hooks.helper.warm).
SESSION_EVENTS = ("SessionStart", "UserPromptSubmit")

AFTER_EVENTS = {"claude-code": ("PostToolUse", "PostToolUseFailure"), "codex": ("PostToolUse",)}


def _claude_or_codex(agent: str, data: dict[str, Any]) -> ToolCall:
    event = _text(data, "hook_event_name")
    if event in SESSION_EVENTS:
        session = _text(data, "session_id")
        return ToolCall(agent, TURN, "", "", _text(data, "cwd"), session or "unknown",
                        _text(data, "prompt_id", "turn_id") or session or "unknown", "")
    after = event in AFTER_EVENTS[agent]
    if event and event != "PreToolUse" and not after:
        raise Unknown(f"{agent}: unexpected event {event!r}")
    return _tool(agent, data, _text(data, "tool_name"), data.get("tool_input"),
                 cwd=_text(data, "cwd"), session=_text(data, "session_id"),
                 turn=_text(data, "prompt_id", "turn_id"), call=_text(data, "tool_use_id"),
                 phase=AFTER if after else BEFORE)


def _gemini(agent: str, data: dict[str, Any]) -> ToolCall:
    event = _text(data, "hook_event_name")
    session, cwd = _text(data, "session_id"), _text(data, "cwd")
    if event == "BeforeAgent":
        # A new prompt: its timestamp names the turn the following tool calls belong to.
        return ToolCall(agent, TURN, "", "", cwd, session or "unknown",
                        _text(data, "timestamp") or str(time.time_ns()), "")
    if event and event not in ("BeforeTool", "AfterTool"):
        raise Unknown(f"{agent}: unexpected event {event!r}")
    return _tool(agent, data, _text(data, "tool_name"), data.get("tool_input"), cwd=cwd,
                 session=session, turn="", call="",
                 phase=AFTER if event == "AfterTool" else BEFORE)


CURSOR_ALLOW = '{"permission": "allow"}'


def _cursor(agent: str, data: dict[str, Any]) -> ToolCall:
    event = _text(data, "hook_event_name")
    roots = data.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else ""
    ids = dict(session=_text(data, "conversation_id", "session_id"),
               turn=_text(data, "generation_id"), answer=CURSOR_ALLOW)
    if event in ("beforeShellExecution", "afterShellExecution") or (
            not event and "command" in data):
        return _tool(agent, data, "Shell", {"command": _text(data, "command")},
                     cwd=_text(data, "cwd") or root, call=_text(data, "tool_use_id"),
                     phase=AFTER if event == "afterShellExecution" else BEFORE, **ids)
    if event in ("preToolUse", "postToolUse", "postToolUseFailure"):
        tool_input = data.get("tool_input")
        cwd = _text(tool_input, "cwd", "working_directory") if isinstance(tool_input, dict) else ""
        return _tool(agent, data, _text(data, "tool_name"), tool_input,
                     cwd=cwd or _text(data, "cwd") or root, call=_text(data, "tool_use_id"),
                     phase=BEFORE if event == "preToolUse" else AFTER, **ids)
    raise Unknown(f"{agent}: unexpected event {event!r}")


def _plugin(agent: str, data: dict[str, Any]) -> ToolCall:
    # Sent by our own plugin (hooks/plugin.py) from OpenCode's or Kilo's tool.execute.before
    # and tool.execute.after.
    return _tool(agent, data, _text(data, "tool"), data.get("args"),
                 cwd=_text(data, "directory"), session=_text(data, "sessionID"),
                 turn=_text(data, "turn"), call=_text(data, "callID"),
                 phase=AFTER if _text(data, "phase") == AFTER else BEFORE)


_PARSERS = {"claude-code": _claude_or_codex, "codex": _claude_or_codex, "gemini": _gemini,
            "cursor": _cursor, "opencode": _plugin, "kilo": _plugin}
