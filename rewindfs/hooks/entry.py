"""`rewind hook AGENT`: the agent's payload on stdin, a checkpoint when one is due, exit 0.

The gate (hooks.gate): before a shell command, a checkpoint unless the command is known
to change nothing (a short allowlist of read-only forms); before the first file write of
a turn, one. The harmless path (`ls`, `git status` ...) imports only json, the payload
parsers and the allowlist. The store is imported only when a checkpoint is due; then
every project the command can reach is checkpointed (hooks.protect). Everything the hook
does runs under one deadline, ``REWIND_HOOK_TIMEOUT`` seconds (default 20, well under
every agent's own hook timeout, which `rewind hooks install` sets to 60 s): past it the
hook logs what it was doing as skipped and exits 0 at once (the store survives a writer
that stops midway, as it survives a kill), so the agent never waits longer.

What comes from the agent is bounded: stdin is read for READ_SECONDS at most and kept up
to MAX_PAYLOAD bytes (an agent that holds stdin open after a whole payload is answered
at once), and a command is classified only up to MAX_CLASSIFY characters and within
CLASSIFY_SECONDS. When a payload is too large or too slow to read whole, or a command too
long or too slow to classify, the hook fails safe: it checkpoints, saying why in the
reason. The reason never keeps a credential (store.history's redactor).

A checkpoint is "before" only if it is recorded before the hook answers. The resident
helper (hooks.helper) takes it when one is up and takes the request on in time; a helper
that does not is left behind and the hook takes the checkpoint itself, and at the
deadline the helper's child still working is killed and waited for, so nothing named
"before:" is recorded after the agent went on. Nothing goes to the agent's stdout except
what its protocol asks for (Cursor: an allow answer) and, when something was left
unprotected (a guard, an error, the deadline), the message its protocol shows the user
(hooks.notice), once per session; nothing to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time

from rewindfs.hooks import hooklog, isolation, payloads
from rewindfs.hooks.deadline import TimeUp

TYPE_CHECKING = False  # (typing itself: milliseconds of every hook call)
if TYPE_CHECKING:  # a thread only for a checkpoint taken here (`_Run.arm`)
    import threading
    from collections.abc import Callable

MAX_PAYLOAD = 16 * 1024 * 1024   # bytes of a payload kept (the rest is read and dropped)
READ_SECONDS = 5.0
MAX_CLASSIFY = 256 * 1024        # characters of a command the classifier reads
CLASSIFY_SECONDS = 2.0
DEFAULT_TIMEOUT, MAX_TIMEOUT = hooklog.HOOK_SECONDS, hooklog.MAX_HOOK_SECONDS
MAX_REASON = 200


# Set in a hook the resident process runs (resident.clichild): told what to answer should
# this process not finish by the deadline (stopped, stuck where its timer cannot strike),
# each time that changes, so the client that kills it still says what was not protected.
tell_client: Callable[[str], None] | None = None


class _Run:
    """What this hook is doing, for its deadline to say (and answer) when it strikes."""

    def __init__(self, agent: str, answer: str, limit: float):
        self.agent, self.answer, self.limit = agent, answer, limit
        self.started = time.monotonic()
        self.call: payloads.ToolCall | None = None
        self.doing = "reading the payload"
        self.notices: list = []   # hooks.notice.Notice: what is not protected, for the answer
        self.timer: threading.Timer | None = None

    def left(self) -> float:
        return self.limit - (time.monotonic() - self.started)

    @property
    def doing(self) -> str:
        return self._doing

    @doing.setter
    def doing(self, what: str) -> None:
        self._doing = what
        if tell_client is not None and self.call is not None:
            tell_client(self.told(timed_out=True, remember=False))

    def arm(self) -> None:
        """From here on, `give_up` strikes at the deadline, whatever the hook is doing
        (a checkpoint stuck in libgit2 too). Armed only for a checkpoint taken here:
        reading and classifying are bounded by timer signals of their own
        (`deadline.within`), waiting on the helper by the socket's timeouts, so most calls
        start no thread."""
        if self.timer is None:
            import threading  # (only a checkpoint taken here arms it)

            self.timer = threading.Timer(max(self.left(), 0.001), self.give_up)
            self.timer.daemon = True
            self.timer.start()

    def told(self, timed_out: bool = False, remember: bool = True) -> str:
        """The answer, with what this call left unprotected said to the user (each once
        per session, `remember`ed in the session's memory: hooks.notice; the deadline's
        too). The deadline's thread does not wait on the session's lock: it says all."""
        if not (self.notices or timed_out):
            return self.answer
        from rewindfs.hooks import notice

        notices = list(self.notices)
        if timed_out and self.call is not None:
            notices.append(notice.Notice(f"deadline\0{self.call.cwd}", (
                f"{self.doing} did not finish within {self.limit:g}s "
                "(REWIND_HOOK_TIMEOUT); the command ran without it")))
        if not notices or self.call is None:
            return self.answer
        if remember:
            notices = notice.fresh(self.agent, self.call.session, notices)
        return notice.answer(self.agent, self.answer, notices,
                             after=self.call.phase == payloads.AFTER)

    def give_up(self) -> None:
        try:
            # (the helper's module may be half imported when the deadline strikes)
            abandon = getattr(sys.modules.get("rewindfs.hooks.helper"), "abandon", None)
            stopped = abandon is not None and abandon()
            hooklog.write(self.agent, hooklog.SKIPPED,
                          f"{self.doing} did not finish within {self.limit:g}s: skipped"
                          + ("; the helper's checkpoint was stopped before it was recorded"
                             if stopped else ""))
            _answer(self.told(timed_out=True, remember=False))
        finally:
            os._exit(0)   # the store survives a writer stopped midway, as it survives a kill


def main(argv: list[str]) -> int:
    agent = argv[0] if argv else ""
    isolation.scrub_environment()   # for everything the hook starts
    run = _Run(agent, payloads.CURSOR_ALLOW if agent == "cursor" else "",
               hooklog.seconds("REWIND_HOOK_TIMEOUT", DEFAULT_TIMEOUT, MAX_TIMEOUT))
    timed_out = False
    try:
        seconds = min(READ_SECONDS, run.limit)
        call, partial = _call(agent, seconds, *_read(seconds))
        run.answer, run.call = call.answer, call
        handle(call, run, partial)
    except payloads.Unknown as exc:
        hooklog.write(agent, hooklog.SKIPPED, f"ignored: {exc}")
    except TimeUp as exc:   # the helper did not finish in time (it was stopped first)
        hooklog.write(agent, hooklog.SKIPPED,
                      f"{run.doing} did not finish within {run.limit:g}s: skipped; {exc}")
        timed_out = True
    except BaseException as exc:  # noqa: BLE001 - the agent must never see a hook failure
        hooklog.write(agent, hooklog.ERROR, f"{type(exc).__name__}: {exc}")
    finally:
        if run.timer is not None:
            run.timer.cancel()
    try:
        _answer(run.told(timed_out))
    except Exception as exc:  # noqa: BLE001 - the agent must never see a hook failure
        hooklog.write(agent, hooklog.ERROR, f"answer: {type(exc).__name__}: {exc}")
        _answer(run.answer)
    return 0


def _answer(answer: str) -> None:
    if answer:
        try:
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
        except OSError:
            pass


def _read(seconds: float) -> tuple[object, bytes, int, bool]:
    """(the payload when already parsed else None, the bytes kept, how many came, whether
    it came whole): read until end of input, or until what came is a whole JSON object
    (an agent may hold stdin open after it), for `seconds` at most."""
    from rewindfs.hooks.deadline import within

    kept, total, tried = bytearray(), 0, 0
    try:
        stream = sys.stdin.buffer
        with within(seconds):
            while True:
                chunk = stream.read1(1 << 20)
                if not chunk:
                    return None, bytes(kept), total, True
                total += len(chunk)
                kept += chunk[: max(0, MAX_PAYLOAD - len(kept))]
                # Parsed at most at doubling sizes: never quadratic in a large payload.
                if total == len(kept) and len(kept) >= 2 * tried and \
                        kept.rstrip().endswith(b"}"):
                    tried = len(kept)
                    try:
                        return json.loads(kept), bytes(kept), total, True
                    except ValueError:
                        pass
    except TimeUp:
        return None, bytes(kept), total, False
    except (OSError, AttributeError, ValueError):   # no stdin at all, or a closed one
        return None, bytes(kept), total, True


def _call(agent: str, seconds: float, data: object, raw: bytes, total: int, whole: bool
          ) -> tuple[payloads.ToolCall, str]:
    """The tool call, and why its payload could not be read whole ('' when it was)."""
    if data is None and whole and total == len(raw):
        try:
            data = json.loads(raw) if raw.strip() else None
        except ValueError:
            raise payloads.Unknown(f"{agent}: payload is not JSON ({total} bytes)") from None
        return payloads.parse(agent, data), ""
    if data is not None:
        return payloads.parse(agent, data), ""
    partial = (f"its {_size(total)} payload is over the {_size(MAX_PAYLOAD)} read"
               if total > len(raw) else
               f"its payload did not come whole within {seconds:g}s")
    try:
        return payloads.parse(agent, payloads.head(raw)), partial
    except payloads.Unknown as exc:
        raise payloads.Unknown(f"{exc} ({partial})") from None


def handle(call: payloads.ToolCall, run: _Run | None = None, partial: str = ""
           ) -> dict | None:
    if call.kind == payloads.TURN:
        _state().start_turn(call.agent, call.session, call.turn)
        from rewindfs.hooks import helper

        helper.warm(call)   # the project watched, its first capture in the background
        return None
    return _checkpointed(call, run, partial,
                         "after" if call.phase == payloads.AFTER else "before")


def _checkpointed(call: payloads.ToolCall, run: _Run | None, partial: str, phase: str
                  ) -> dict | None:
    """The call's checkpoints, when the gate says they are due: before it runs, or (its
    after event: Claude Code's PostToolUse, ...) the files once it is done, so what it
    changed is known to be its own (rewindfs.agent.attribution); a call the gate let
    through unrecorded is let be after it too."""
    if call.kind == payloads.SHELL or partial and call.kind == payloads.OTHER and (
            not call.tool or call.tool in payloads.SHELL_TOOLS):
        if run is not None:
            run.doing = "reading the command"
        why = partial or _unclassifiable(call.command)
        seconds = min(CLASSIFY_SECONDS, max(run.left(), 0.001)) if run else CLASSIFY_SECONDS
        if not why and not _due(call.command, seconds):
            return None
        what = _one_line(call.command) if call.command else (call.tool or "a tool")
    elif call.kind == payloads.WRITE:
        # Every write its own step (its after event ends it): a change is its call's.
        why = partial
        what = f"{call.tool} {_one_line(call.command)}".rstrip()
    else:
        return None
    turn = call.turn
    if call.agent == "gemini":
        turn = _state().turn_of(call.agent, call.session) or call.session
    reason = f"{phase}: {what}"
    if why and phase == "before":
        reason += f" ({why}: checkpointed to be safe)"
    from rewindfs.hooks.protect import protect

    return protect(call, reason, turn, run, run.notices if run is not None else [])


def _unclassifiable(command: str) -> str:
    """Why `command` is not to be read ('' when it is)."""
    if len(command) > MAX_CLASSIFY:
        return f"a {_size(len(command))} command, too long to classify"
    return ""


def _due(command: str, seconds: float) -> bool:
    """The gate's verdict (hooks.gate: a checkpoint unless the command is known to change
    nothing), within `seconds`; past them (or should it fail), due: a checkpoint too
    many costs less than one missing."""
    from rewindfs.hooks.deadline import within
    from rewindfs.hooks.gate import due

    try:
        with within(seconds):
            return due(command)
    except TimeUp:
        hooklog.write("-", hooklog.INFO, f"a {_size(len(command))} command not read "
                      f"within {seconds:g}s: checkpointed to be safe")
        return True
    except Exception as exc:  # noqa: BLE001 - a gate bug must not cost a checkpoint
        hooklog.write("-", hooklog.ERROR, f"gate: {type(exc).__name__}: {exc}")
        return True


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.0f} KiB"


def _one_line(text: str) -> str:
    """The start of `text` on one line, credentials redacted, at most MAX_REASON long."""
    from rewindfs.store.history import redact

    line = redact(" ".join(text[: 16 * MAX_REASON].split()))
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 3] + "..."


def _state():
    """The sessions' memory (hooks.state), imported when a call needs it: a harmless
    command of most agents needs none (pathlib and the lock's code are its imports)."""
    from rewindfs.hooks import state

    return state
