"""The watch as the captures' change source (store.capture.changesource).

`Local` asks a Watcher in this process (the resident process's own, and the tests');
`Remote` is what a child forked by the resident process registers: it asks its parent
over the resident socket (resident.wire: the `since` and `captured` requests), because a
child's copy of the watch stops at the fork and must never read the inotify instance it
shares with its parent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rewindfs.store.capture import Plan


def limits_key(limits: Any) -> tuple[int, int]:
    return (int(limits.max_file_size), int(limits.max_files))


def plan_of(base: Any, paths: list[bytes], token: Any, limits: Any) -> Plan | None:
    """The changesource Plan for what Watcher.plan answered."""
    if token is None:
        return None
    from rewindfs.store.capture import Since

    since = None if base is None else Since(base.tree, base.count, limits, tuple(paths),
                                            base.skipped, token)
    return Plan(since, token)


class Local:
    def __init__(self, watcher: Any):
        self.watcher = watcher

    def begin(self, workdir: Path, limits: Any) -> Plan | None:
        base, paths, token = self.watcher.plan(os.fsencode(str(workdir)), limits_key(limits))
        return plan_of(base, paths, token, limits)

    def done(self, workdir: Path, token: Any, limits: Any, capture: Any) -> None:
        self.watcher.captured(os.fsencode(str(workdir)), token, capture.tree_id.raw,
                              capture.file_count, capture.skipped(), limits_key(limits))


ASK_SECONDS = 5.0            # a sync (watch.SYNC_SECONDS) and the answer
MAX_ANSWER = 256 * 1024 * 1024   # the changed paths of a big tree


class Remote:
    """In a child of the resident process (or any `rewind` run in its own process while
    one is up: `rewind ui`, say): the watch, asked through the resident process."""

    def begin(self, workdir: Path, limits: Any) -> Plan | None:
        answer = _ask({"kind": "since", "workdir": str(workdir),
                       "limits": list(limits_key(limits))})
        if answer is None or not isinstance(answer.get("token"), list):
            return None
        token = tuple(answer["token"])
        base = answer.get("base")
        if base is None:
            return Plan(None, token)
        from rewindfs.store.capture import Since

        paths = tuple(os.fsencode(p) for p in answer.get("paths", []))
        return Plan(Since(bytes.fromhex(base["tree"]), base["count"], limits, paths,
                          base["skipped"], token), token)

    def done(self, workdir: Path, token: Any, limits: Any, capture: Any) -> None:
        _ask({"kind": "captured", "workdir": str(workdir), "token": list(token),
              "tree": capture.tree_id.raw.hex(), "count": capture.file_count,
              "skipped": capture.skipped(), "limits": list(limits_key(limits))})


def remote_if_up() -> Remote | None:
    """A Remote when a resident process of this Hermes home answers, else None."""
    from rewindfs.resident import wire

    sock = wire.connect(0.5)
    if sock is None:
        return None
    sock.close()
    return Remote()


def ask(request: dict[str, Any]) -> dict[str, Any] | None:
    """The resident process's answer to a watch request (None: none, or an error)."""
    return _ask(request)


def _ask(request: dict[str, Any]) -> dict[str, Any] | None:
    from rewindfs.resident import wire

    sock = wire.connect(ASK_SECONDS)
    if sock is None:
        return None
    try:
        wire.send(sock, {**request, "code": wire.code_key()})
        answer = wire.receive(sock, MAX_ANSWER)
    except OSError:
        return None
    finally:
        sock.close()
    return answer if answer is not None and answer.get("ok") else None
