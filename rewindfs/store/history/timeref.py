"""Times a person types as checkpoint references: `10 minutes ago`, `@yesterday-14:00`, ISO.

Grammar (case-insensitive; an optional leading `@` as in git's `@{...}`):
    now
    N UNIT ago        UNIT: s sec second, m min minute, h hour, d day, w week (plurals too);
                      `10m ago`, `10 minutes ago`, `1 day ago`
    today | yesterday [ (-| |T) HH:MM[:SS] ]
    HH:MM[:SS]        today at that time
    YYYY-MM-DD[ (T| )HH:MM[:SS][.ffffff][Z|+HH:MM] ]   ISO 8601 (local time unless an
                      offset is given)
A day without a time of day means the end of that day (the last checkpoint that day).
Times without an offset are local. `parse` returns None for text that is not a time,
so the caller can report an unknown reference instead.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

from rewindfs.errors import InvalidInput

_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600,
          "hr": 3600, "hour": 3600, "d": 86400, "day": 86400, "w": 604800, "week": 604800}
_AGO = re.compile(r"^(\d+)\s*([a-z]+?)s?\s+ago$")
_DAY = re.compile(r"^(today|yesterday)(?:[-\sT](\d{1,2}):(\d\d)(?::(\d\d))?)?$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d\d)(?::(\d\d))?$")
_ISO = re.compile(r"^\d{4}-\d\d-\d\d([t ]\d\d:\d\d(:\d\d(\.\d+)?)?(z|[+-]\d\d:?\d\d)?)?$")


def parse(text: str, now: float | None = None) -> float | None:
    """Epoch seconds that `text` names, or None when it is not a time reference.

    Raises InvalidInput for text that is clearly meant as a time but impossible
    (`25:00`, `2026-02-30`).
    """
    now = time.time() if now is None else now
    raw = text.strip()
    forced = raw.startswith("@")
    spec = raw[1:].strip().lower() if forced else raw.lower()
    spec = " ".join(spec.replace("_", " ").split())
    if spec == "now":
        return now
    if m := _AGO.match(spec):
        unit = _UNITS.get(m.group(2)) or _UNITS.get(m.group(2).rstrip("s"))
        if unit is not None:
            return now - int(m.group(1)) * unit
    try:
        if m := _DAY.match(spec):
            day = datetime.fromtimestamp(now)
            if m.group(1) == "yesterday":
                day -= timedelta(days=1)
            if m.group(2) is None:
                return _end_of_day(day) if m.group(1) == "yesterday" else now
            return _at(day, m.group(2), m.group(3), m.group(4))
        if m := _CLOCK.match(spec):
            return _at(datetime.fromtimestamp(now), m.group(1), m.group(2), m.group(3))
        if _ISO.match(spec):
            iso = spec.upper().replace(" ", "T")
            if "T" not in iso:
                return _end_of_day(datetime.fromisoformat(iso))
            return datetime.fromisoformat(iso).timestamp()
    except ValueError as exc:
        raise InvalidInput(f"invalid time {text!r}: {exc}") from None
    if forced:
        raise InvalidInput(f"invalid time {text!r} (try `@10 minutes ago`, "
                           "`@yesterday-14:00` or `@2026-01-05T14:00`)")
    return None


def describe(epoch: float) -> str:
    """A local time as people read it."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def _at(day: datetime, hour: str, minute: str, second: str | None) -> float:
    return day.replace(hour=int(hour), minute=int(minute), second=int(second or 0),
                       microsecond=0).timestamp()


def _end_of_day(day: datetime) -> float:
    return day.replace(hour=23, minute=59, second=59, microsecond=999999).timestamp()
