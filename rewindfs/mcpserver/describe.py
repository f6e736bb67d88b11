"""Checkpoints and restores as the MCP tools describe them to a model: one line per
checkpoint, and a restore's plan or outcome with how to take it back."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from rewindfs import restore as rs
from rewindfs import store as st
from rewindfs.cli.output.human import human_age
from rewindfs.mcpserver import sizing
from rewindfs.store.history import quote_path


def checkpoint_name(cp: st.Checkpoint) -> str:
    if cp.number:
        return f"checkpoint {cp.number}"
    return "pre-rollback snapshot" if cp.pre_rollback else "checkpoint (unnumbered)"


def row(cp: st.Checkpoint, now: float) -> str:
    """`3. a1b2c3d4  5m ago  before: rm x  [claude-code, turn t1]  labels: v1`"""
    number = f"{cp.number}." if cp.number else ("?" if cp.past_break else "-")
    text = f"{number:>4} {cp.short}  {human_age(cp.time, now):>8}  {_short(cp.reason)}"
    agent = cp.trailers.get("Rewind-Agent")
    if agent:
        turn = cp.trailers.get("Rewind-Turn")
        text += f"  [{_short(agent)}" + (f", turn {_short(turn)}]" if turn else "]")
    if cp.labels:
        text += f"  labels: {', '.join(_short(x) for x in cp.labels)}"
    return text


def _short(text: str) -> str:
    return sizing.one_line(text, sizing.REASON_CHARS)


def shell_word(word: str | bytes) -> str:
    """`word` as a shell reads it back in a command the user may run: quoted as shlex
    does, or a name that is not plain text in bash's and zsh's `$'...'`, with the escapes
    quote_path writes (`$'caf\\351.txt'`)."""
    shown = quote_path(os.fsencode(word) if isinstance(word, str) else word)
    if not shown.startswith('"'):
        return shlex.quote(shown)
    return "$'" + shown[1:-1].replace("'", "\\'") + "'"


def _names(paths: list[bytes]) -> str:
    return ", ".join(sizing.capped([quote_path(p) for p in paths]))


def restore_text(result: rs.RestoreResult, workdir: Path, kind: str) -> str:
    """A restore's (or undo's) plan, when it was a dry run, or what it did."""
    plan, outcome, target = result.plan, result.outcome, result.target
    name = f"{target.short} ({checkpoint_name(target)}: {sizing.one_line(target.reason)})"
    lines = []
    if outcome is None:
        lines.append(f"Plan for the {kind} of {workdir} to {name}; nothing was changed:")
        if result.safe:
            lines.append("  safe mode: the agent recorded its writes since this checkpoint, "
                         "so files a person changed since are kept")
        for what, verb in (("overwrite", "overwrite"), ("create", "create"),
                           ("delete", "delete"), ("chmod", "change mode of")):
            found = plan.of(what)
            if found:
                lines.append(f"  {verb} {len(found)}: {_names(found)}")
        if not plan.actions:
            lines.append("  nothing to change: the files already match")
        else:
            lines.append(f"Call {kind} again without dry_run to carry it out.")
    else:
        failed = not result.success
        lines.append(result.failed_midway(kind, name) if failed else
                     (f"Restored {workdir} to {name}." if kind == "restore" else
                      f"Undid the last restore of {workdir}: back to {name}."))
        lines.append(f"  {len(outcome.written)} file(s) written: {_names(outcome.written)}"
                     if outcome.written else "  no file written")
        if outcome.deleted:
            lines.append(f"  {len(outcome.deleted)} deleted: {_names(outcome.deleted)}")
        lines += [f"  FAILED {quote_path(p)}: {sizing.one_line(e)}"
                  for p, e in outcome.failed[:sizing.FILES_SHOWN]]
        if outcome.not_attempted:
            lines.append(f"  not attempted: {_names(outcome.not_attempted)}")
        if outcome.appeared:
            lines.append(f"  kept (appeared during the {kind}): {_names(outcome.appeared)}")
    if plan.kept_user_edits:
        lines.append(f"  kept a person's edits: {_names(plan.kept_user_edits)}")
    if plan.kept_not_agent:
        lines.append(f"  kept (not written by the agent): {_names(plan.kept_not_agent)}")
    if plan.untouched:
        lines.append(f"  untouched (ignored or not captured): {_names(plan.untouched)}")
    if result.git is not None:
        lines += result.git.lines()
    elif result.git_hint:
        lines.append(f"  {result.git_hint}" + (" (restore with git=true)"
                                               if "--git`" in result.git_hint else ""))
    if result.pre_rollback:
        lines.append(f"Pre-rollback snapshot {result.pre_rollback[:8]} saved first: to take "
                     f"this {kind} back, call undo (or the user runs `rewind undo` in "
                     f"{workdir}).")
    return "\n".join(lines)
