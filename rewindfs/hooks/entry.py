"""`rewind hook AGENT`: the agent's payload on stdin, a checkpoint when one is due, exit 0.

The harmless path (most tool calls) imports only json, the payload parsers and the
classifier. The store is imported only when a checkpoint is due, and that checkpoint runs
under a deadline: past it the hook logs the checkpoint as skipped and exits 0 at once (the
store survives a writer that stops midway, as it survives a kill), so the agent never
waits longer than ``REWIND_HOOK_TIMEOUT`` seconds (default 20, well under every agent's
own hook timeout, which `rewind hooks install` sets to 60 s). The resident helper, when
one is up (hooks.helper), answers for the hook: nothing changed since the newest
checkpoint, from the store's stamp (hooks.checkpoint), or the checkpoint; else the hook does the
same itself. Nothing goes to the agent's stdout except what its protocol asks for
(Cursor: an allow answer); nothing to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from rewindfs.hooks import hooklog, payloads, state

MAX_PAYLOAD = 16 * 1024 * 1024
DEFAULT_TIMEOUT = 20.0
MAX_REASON = 200


def main(argv: list[str]) -> int:
    agent = argv[0] if argv else ""
    answer = payloads.CURSOR_ALLOW if agent == "cursor" else ""
    try:
        raw = sys.stdin.buffer.read(MAX_PAYLOAD)
        try:
            data = json.loads(raw) if raw.strip() else None
        except ValueError:
            raise payloads.Unknown(f"{agent}: payload is not JSON ({len(raw)} bytes)") from None
        call = payloads.parse(agent, data)
        answer = call.answer
        handle(call, answer)
    except payloads.Unknown as exc:
        hooklog.write(agent, hooklog.SKIPPED, f"ignored: {exc}")
    except BaseException as exc:  # noqa: BLE001 - the agent must never see a hook failure
        hooklog.write(agent, hooklog.ERROR, f"{type(exc).__name__}: {exc}")
    _answer(answer)
    return 0


def _answer(answer: str) -> None:
    if answer:
        try:
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
        except OSError:
            pass


def handle(call: payloads.ToolCall, answer: str = "") -> None:
    if call.kind == payloads.TURN:
        state.start_turn(call.agent, call.session, call.turn)
        return
    turn = call.turn
    if call.agent == "gemini":
        turn = state.turn_of(call.agent, call.session) or call.session
    if call.kind == payloads.SHELL:
        from rewindfs.agent.classify import classify

        destructive, _why = classify(call.command)
        if not destructive:
            return
        reason = f"before: {_one_line(call.command)}"
    elif call.kind == payloads.WRITE:
        key = f"{turn}\0{call.cwd}"
        if state.written(call.agent, call.session, key):
            return   # once per turn: this turn's first write already has its checkpoint
        reason = f"before: {call.tool} {_one_line(call.command)}".rstrip()
    else:
        return
    outcome = _with_deadline(call, reason, turn, answer)
    if call.kind == payloads.WRITE and outcome is not None:
        state.mark_written(call.agent, call.session, f"{turn}\0{call.cwd}")


def _with_deadline(call: payloads.ToolCall, reason: str, turn: str, answer: str):
    limit = _timeout()
    started = time.monotonic()

    def give_up() -> None:
        hooklog.write(call.agent, hooklog.SKIPPED,
                      f"checkpoint of {call.cwd} did not finish within {limit:g}s: skipped "
                      f"({reason})")
        _answer(answer)
        os._exit(0)   # the store survives a writer stopped midway, as it survives a kill

    timer = threading.Timer(limit, give_up)
    timer.daemon = True
    timer.start()
    try:
        from rewindfs.hooks import helper

        root = state.root_of(call.agent, call.session, call.cwd)
        outcome = helper.take(call, reason, turn, root, limit)
        if not root:
            state.remember_root(call.agent, call.session, call.cwd, outcome["directory"])
    finally:
        timer.cancel()
    took = time.monotonic() - started
    scoped = outcome.get("scoped")
    what = ("checkpoint" if outcome.get("taken") else
            "nothing changed (stamp) since the last checkpoint" if outcome.get("stamp") else
            "unchanged since the last checkpoint")
    hooklog.write(call.agent, hooklog.INFO,
                  f"{what} of {outcome.get('directory')} ({reason}; turn {turn}; "
                  f"{'' if scoped is None else f'{scoped} changed path(s) looked at; '}"
                  f"{'by the helper; ' if outcome.get('helper') else ''}{took:.2f}s)")
    return outcome


def _timeout() -> float:
    try:
        value = float(os.environ.get("REWIND_HOOK_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 3] + "..."
