"""A confirmed plan carried out as shown, or refused: a restore (or undo) a person confirmed
changes no path in a way its plan did not show, and an undo of "the last restore" takes
back the restore it named, only while that is still the last. Checked with the project
held, before the journal's intent: a refusal changes nothing and records nothing."""

from __future__ import annotations

from pathlib import Path

from rewindfs.errors import Refused
from rewindfs.restore import journal
from rewindfs.restore.plan import CHMOD, CREATE, DELETE, OVERWRITE, Action, Plan
from rewindfs.store.history import quote_path

_VERBS = {DELETE: "delete", CREATE: "create", OVERWRITE: "overwrite", CHMOD: "change the mode of"}


def as_shown(plan: Plan, confirmed: Plan | None, kind: str) -> None:
    """Refuse a plan that would leave a path otherwise than the confirmed one showed (a
    file deleted, created or written that it did not list); one that does less (a file
    already as wanted by now) is carried out."""
    if confirmed is None:
        return
    shown = {_goal(a) for a in confirmed.actions}
    surprise = [a for a in plan.actions if _goal(a) not in shown]
    if not surprise:
        return
    counts: dict[str, int] = {}
    for action in surprise:
        counts[action.kind] = counts.get(action.kind, 0) + 1
    what = " and ".join(f"{_VERBS[k]} {n}" for k, n in counts.items())
    first = surprise[0]
    nothing = {"undo": "nothing was undone", "revert": "nothing was reverted"}.get(
        kind, "nothing was restored")
    raise Refused(f"{kind} would now also {what} file(s) you did not confirm (e.g. "
                  f"{_VERBS[first.kind]} {quote_path(first.path)}); {nothing}, run it again "
                  "to see the new plan")


def _goal(action: Action) -> tuple[bytes, str | None, int | None]:
    """What a path is left as: its content and mode, or (None, None) when deleted."""
    entry = action.entry
    return (action.path, entry.oid if entry else None, entry.mode if entry else None)


def still_newest(jpath: Path, newest: str | None, wd: Path) -> None:
    """`newest`: the journal entry an undo of the last restore planned to take back."""
    if newest is None:
        return
    now = journal.last_change(jpath)
    if now is None or now.id != newest:
        raise Refused(f"another restore or undo of {wd} ran since this undo was planned; "
                      "nothing was undone: ask again to see what undo would now take back")
