"""`rewind fetch`: what a remote holds, mirrored under `refs/rewind/remotes/<name>/`.

One `git fetch` of `refs/rewind/m/*`, every machine's folder, this one's included
(what this store pushed is then mirrored as the remote has it: a push killed after
the remote took it is seen as done). Local refs (`refs/hermes/`, labels, notes) are
never a destination, so a remote rewritten by force (or emptied) changes only its
mirror here: the projects of this machine keep every checkpoint.

The fetch is all or nothing: packs are always kept whole (`fetch.unpackLimit=1`:
never unpacked object by object, so a damaged pack leaves no loose objects behind),
every object is checked (`transfer.fsckObjects`), refs are updated in one
transaction (`--atomic`) only once the pack is indexed, and a failed fetch's
temporary files are removed. Fetches are complete, not partial
(`--filter=blob:none`): libgit2, which serves the mount and restores, cannot fetch
a missing blob on demand, and a fetched checkpoint must be there when the remote
is not.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rewindfs.errors import RemoteFailed
from rewindfs.store.objects.layout import Layout, split_remote_ref
from rewindfs.store.objects.repo import Store
from rewindfs.store.remote import deadline, gitremote, remotes
from rewindfs.store.remote.names import fetch_refspec, key, redact

ALL_OR_NOTHING = ("-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1")


@dataclass
class FetchReport:
    remote: str
    url: str  # redacted
    added: list[str] = field(default_factory=list)  # project keys
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"remote": self.remote, "url": self.url, "added": self.added,
                "updated": self.updated, "removed": self.removed}


def fetch(store: Store, name: str, *, progress: bool = False, interactive: bool = True,
          stall: float = deadline.STALL) -> FetchReport:
    """`stall`: seconds git may make no progress before the fetch fails (deadline)."""
    layout = store.layout
    remote = remotes.get(layout, name)
    store.ensure()
    with remotes.lock(layout, name):
        before = remotes.tracking_refs(store.repo, name)
        try:
            mirror(layout, remote.url, fetch_refspec(name), progress=progress,
                   interactive=interactive, what=f"fetch from {name}", stall=stall,
                   stop=remotes.removed(layout, name))
        except RemoteFailed as exc:
            remotes.record(layout, name, "fetch", {"ok": False, "error": str(exc)})
            raise
        after = remotes.tracking_refs(store.repo, name)
    report = FetchReport(name, redact(remote.url))
    old, new = _by_project(before), _by_project(after)
    report.added = sorted(k for k in new if k not in old)
    report.updated = sorted(k for k in new if k in old and new[k] != old[k])
    report.removed = sorted(k for k in old if k not in new)
    remotes.record(layout, name, "fetch", {"ok": True, "projects": len(new),
                                           "changed": len(report.added) + len(report.updated)})
    return report


def mirror(layout: Layout, url: str, refspec: str, *, progress: bool, interactive: bool,
           what: str, stall: float = deadline.STALL,
           stop: Callable[[], str | None] | None = None) -> None:
    """`git fetch --prune` of `refspec` from `url`; RemoteFailed (one line) and nothing
    changed here when it fails, or makes no progress for `stall` seconds."""
    pack_dir = layout.store / "objects" / "pack"
    before = _listing(pack_dir)
    args = [*ALL_OR_NOTHING, "fetch", "--prune", "--atomic", "--no-tags",
            "--no-write-fetch-head", "--progress" if progress else "--quiet", "--", url,
            refspec]
    try:
        outcome = gitremote.run(layout, args, progress=progress, interactive=interactive,
                                stall=stall, stop=stop)
        why = None if outcome.code == 0 else \
            gitremote.reason(outcome.stderr, f"git exit {outcome.code}")
    except deadline.Stalled as exc:
        why = str(exc)
    if why is not None:
        for leftover in _listing(pack_dir) - before:
            if leftover.startswith("tmp_"):
                (pack_dir / leftover).unlink(missing_ok=True)
        raise RemoteFailed(f"{what} failed: {why}")


def _listing(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def _by_project(refs: dict[str, str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for ref, oid in refs.items():
        parts = split_remote_ref(ref)
        if parts is not None:
            name, machine, h16, rest = parts
            out.setdefault(key(name, machine, h16), {})[rest] = oid
    return out
