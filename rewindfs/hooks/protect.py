"""What a hook checkpoints once its gate says a checkpoint is due (`protect`): the project
the agent's call runs in, and for a shell command every other project it can reach
(hooks.scope: git's work tree, the projects of the paths it names and the directories it
`cd`s to), each by the one checkpoint path (hooks.helper.take), one normal checkpoint per
project, all under the hook's one deadline.

Whatever is left unprotected is not only logged but handed to the hook's answer as a
notice (hooks.notice), which the agent shows its user: a checkpoint refused (the home
directory, a folder in no project), one that failed (a store it cannot write, a full
disk), projects past scope.MAX_PROJECTS; the deadline's notice is the entry's.
"""

from __future__ import annotations

import re
import time
from typing import Any

from rewindfs.hooks import hooklog, payloads
from rewindfs.hooks.deadline import TimeUp
from rewindfs.hooks.notice import Notice

DEFAULT_TIMEOUT = 20.0   # (hooks.entry's; when no run bounds the call)
_ERROR_NAME = re.compile(r"[A-Z][A-Za-z]*(Error|Refused|Found|Busy|Damaged|Input): ")


def protect(call: payloads.ToolCall, reason: str, turn: str, run: Any,
            notices: list[Notice]) -> dict[str, Any] | None:
    """The checkpoint of the call's own project (its outcome, None when it failed), then
    of every other project a shell command reaches. What is not protected is appended to
    `notices`. TimeUp (the deadline) passes through, the notice of it is the caller's."""
    outcome = None
    try:
        outcome = checkpoint(call, reason, turn, run, notices=notices)
    except TimeUp:
        raise
    except Exception as exc:  # noqa: BLE001 - said to the user, and the other projects go on
        notices.append(_failed(call, call.cwd, exc))
    if call.kind != payloads.SHELL:
        return outcome
    from rewindfs.hooks.scope import MAX_PROJECTS, beyond

    scope = beyond(call.command, call.cwd)
    # Said before the checkpoints, which the deadline may cut short.
    if scope.left_out:
        notices.append(Notice(f"reach\0{call.cwd}", (
            f"the command reaches {scope.left_out} more project(s) than the {MAX_PROJECTS} "
            f"checkpointed before it (from {call.cwd})")))
    if scope.outside and _destructive(call.command, run):
        shown = scope.outside[:3]
        notices.append(Notice(f"outside\0{chr(0).join(shown)}", (
            f"{', '.join(shown)}{' ...' if len(scope.outside) > 3 else ''} "
            f"{'is' if len(scope.outside) == 1 else 'are'} in no project: no checkpoint "
            f"holds what `{call.command[:80]}` may change there")))
    done = {outcome["directory"]} if outcome else set()
    others = []
    for root in scope.roots:
        if root in done:
            continue
        done.add(root)
        try:
            others.append(checkpoint(call, reason, turn, run, root, notices))
        except TimeUp:
            raise
        except Exception as exc:  # noqa: BLE001 - as above
            notices.append(_failed(call, root, exc))
    if outcome is not None and others:
        outcome = {**outcome, "also": others}
    return outcome


def _destructive(command: str, run: Any) -> bool:
    """Whether the classifier names something destructive in `command` (what makes a
    path outside every project worth saying), within what is left of the deadline."""
    from rewindfs.agent.classify import classify
    from rewindfs.hooks.deadline import within

    try:
        with within(max(min(2.0, run.left() if run is not None else 2.0), 0.001)):
            return classify(command)[0]
    except TimeUp:
        return False


def _failed(call: payloads.ToolCall, where: str, exc: BaseException) -> Notice:
    text = _ERROR_NAME.sub("", str(exc), count=1) or type(exc).__name__
    hooklog.write(call.agent, hooklog.ERROR,
                  f"not protected: {where}: {type(exc).__name__}: {exc}")
    if where not in text:
        text = f"{where}: {text}"
    return Notice(f"failed\0{where}", text)


def _left_unprotected(outcome: dict[str, Any]) -> list[Notice]:
    """What a checkpoint taken does not hold that the command may destroy (files it left
    out: hooks.leftout), and a repository whose state it could not record."""
    from rewindfs.hooks import leftout

    where, out = str(outcome.get("directory") or ""), []
    said = leftout.notice(outcome.get("left_out"))
    if said:
        out.append(Notice(f"left-out\0{where}\0{said}", f"{where}: {said}"))
    refused = outcome.get("git_refused")
    if isinstance(refused, str) and refused:
        out.append(Notice(f"git\0{where}\0{refused}", (
            f"{where}: its .git was not recorded ({refused}): `rewind restore --git` "
            "cannot give the repository back as it is now")))
    return out


def checkpoint(call: payloads.ToolCall, reason: str, turn: str, run: Any,
               root: str | None = None, notices: list[Notice] | None = None
               ) -> dict[str, Any]:
    """One project's checkpoint: `root`, else the project the call's cwd is in (the
    session's memory of it, else found by the checkpoint path and remembered)."""
    started = time.monotonic()
    if run is not None:
        run.doing = f"checkpoint of {root or call.cwd} ({reason})"
    from rewindfs.hooks import helper, state

    remembered = root is None
    if root is None:
        root = state.root_of(call.agent, call.session, call.cwd)
    # Waiting on the helper is bounded by the socket's timeouts; work done here (which
    # may get stuck in libgit2) by the deadline's thread, armed only then.
    outcome = helper.take(call, reason, turn, root,
                          max(run.left(), 0.001) if run is not None else DEFAULT_TIMEOUT,
                          run.arm if run is not None else None)
    if remembered and not root:
        try:
            state.remember_root(call.agent, call.session, call.cwd, outcome["directory"])
        except Exception as exc:  # noqa: BLE001 - remembered next time
            hooklog.write(call.agent, hooklog.ERROR, f"session memory not saved: "
                          f"{type(exc).__name__}: {exc}")
    if notices is not None and call.phase != payloads.AFTER:
        notices += _left_unprotected(outcome)
    took = time.monotonic() - started
    scoped = outcome.get("scoped")
    what = ("checkpoint" if outcome.get("taken") else
            "nothing changed (stamp) since the last checkpoint" if outcome.get("stamp") else
            "unchanged since the last checkpoint")
    hooklog.write(call.agent, hooklog.INFO,
                  f"{what} of {outcome.get('directory')} ({reason}; turn {turn}; "
                  f"{'' if scoped is None else f'{scoped} changed path(s) looked at; '}"
                  f"{'read only what changed (watch); ' if outcome.get('watched') else ''}"
                  f"{'by the helper; ' if outcome.get('helper') else ''}{took:.2f}s)")
    return outcome
