"""Telling the agent's user, in the agent's own answer, what a hook did not protect.

Whatever leaves a project unprotected - a guard (the home directory, a folder in no
project), a bound (the deadline, too many projects), an error (a store it cannot write,
a full disk), a checkpoint refused - becomes one `Notice`: a line for the person and a
key. The hook's answer carries the session's new notices to the agent in the form its
protocol shows the user (`answer`), each key once per agent session (`fresh`: a folder
in no project is said at the first command, not at every one); the log keeps every one.

What each agent shows (their hook docs and sources), and what its model reads, so that
its answer can say it too:
- Claude Code and Codex: `systemMessage` in the hook's JSON on stdout (Claude Code shows
  it to the user; Codex as a warning of the hook's run, in its TUI: `codex exec` prints
  no hook message), and PreToolUse's `additionalContext`, which the model reads.
- Gemini CLI: `systemMessage` (an advisory message; its non-interactive mode prints it).
- Cursor: `user_message` (to the user) and `agent_message` (to the model) beside its
  `permission` answer.
- OpenCode and Kilo: our plugin reads `systemMessage` from the hook's stdout, shows it in
  a toast and puts it at the head of the tool's output (hooks.plugin).

Anything can be in a notice (paths from the project tree, a command's words): it is cut
to one line of at most MAX_LINE characters with every control character replaced, so
nothing reaches the person's terminal but text, and its credentials are redacted (the
store's redactor, as for every reason and log line).
"""

from __future__ import annotations

import json

PREFIX = "rewind: not protected: "
MAX_LINE = 400
MAX_KEPT = 64   # keys remembered per session


class Notice:
    __slots__ = ("key", "text")

    def __init__(self, key: str, text: str) -> None:
        self.key, self.text = key, _clean(text)

    def line(self) -> str:
        return PREFIX + self.text


def _clean(text: str) -> str:
    text = " ".join(text.split())
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."


def answer(agent: str, base: str, notices: list[Notice], after: bool = False) -> str:
    """The hook's stdout: `base` (what the agent's protocol asks for, '' for none) with
    `notices` shown to the user the way `agent` shows a hook's message (`after`: the
    answer to a call's after event, which carries no PreToolUse context)."""
    if not notices:
        return base
    from rewindfs.store.history import redact

    message = redact("\n".join(n.line() for n in notices))
    if agent == "cursor":
        data = json.loads(base) if base else {"permission": "allow"}
        return json.dumps({**data, "user_message": message, "agent_message": message})
    if agent in ("claude-code", "codex") and not after:
        return json.dumps({"systemMessage": message, "hookSpecificOutput": {
            "hookEventName": "PreToolUse", "additionalContext": message}})
    return json.dumps({"systemMessage": message})


def fresh(agent: str, session: str, notices: list[Notice]) -> list[Notice]:
    """The `notices` not yet said in this agent session (each key once), now remembered
    as said. Should the session's memory fail, they are said again rather than lost."""
    if not notices:
        return []
    from rewindfs.hooks import state

    new: list[Notice] = []

    def change(data: dict) -> bool:
        said = [k for k in data.get("notified") or [] if isinstance(k, str)]
        for notice in notices:
            if notice.key not in said and all(n.key != notice.key for n in new):
                new.append(notice)
        data["notified"] = [*said, *(n.key for n in new)][-MAX_KEPT:]
        return bool(new)

    try:
        state.update(agent, session, change)
    except Exception:  # noqa: BLE001 - said twice costs less than never said
        return _unique(notices)
    return new


def _unique(notices: list[Notice]) -> list[Notice]:
    out: list[Notice] = []
    for notice in notices:
        if all(n.key != notice.key for n in out):
            out.append(notice)
    return out
