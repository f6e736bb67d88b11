"""Who and when a commit rewindfs writes is by: rewindfs, at that moment, with the offset
from UTC in force in the local time zone at that moment (daylight saving time included).

One signature for every commit rewindfs writes (checkpoints, notes, composed restore
targets): Hermes's `timestamp` and the mount's directory names read the time and its
offset from it.
"""

from __future__ import annotations

import time

import pygit2

NAME, EMAIL = "rewindfs", "rewindfs@local"


def signature(when: float | None = None) -> pygit2.Signature:
    now = time.time() if when is None else when
    return pygit2.Signature(NAME, EMAIL, int(now), offset_minutes(now))


def offset_minutes(when: float) -> int:
    """Minutes east of UTC in the local time zone at `when` (+120 in a Berlin July)."""
    return time.localtime(when).tm_gmtoff // 60
