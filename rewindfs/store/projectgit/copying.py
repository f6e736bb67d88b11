"""A project repository's objects copied into the store: git's own fetch, of what is new.

git, not libgit2, copies them, because git's fetch is what makes a first copy of a long
history cheap and safe at once: the project's side (upload-pack) sends its packed
objects as they are, deltas included, and the store's side (index-pack, with
`transfer.fsckObjects`) re-hashes and checks every object it receives, so a crafted
`.git` cannot put an object in the store under another object's id, nor a malformed one.
Hard links of the project's packs would be cheaper still but enter the store unverified,
and libgit2's pack builder recomputes every delta. The wants go by id (protocol v2
serves any object the repository has: the stash's older entries and staged blobs are
no ref's), and the negotiation starts from the states already recorded
(`refs/rewind/git/*`), so only what the store lacks is sent.

Nothing of the user's or the project's configuration acts on the store's side
(store.objects.gitcli's isolation, no hooks, no gc); only the file transport is allowed;
the copy is bounded in time (Bounds.seconds). A copy cut short leaves no object the
store names (a fetched pack is complete or absent).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from rewindfs.errors import StoreError
from rewindfs.store.objects import gitcli
from rewindfs.store.objects.layout import GIT_PREFIX, Layout
from rewindfs.store.projectgit.bounds import Refusal

FETCH_CONFIG = ("protocol.version=2", "protocol.allow=never", "protocol.file.allow=always",
                "transfer.fsckObjects=true", "fetch.unpackLimit=1", "core.hooksPath=/dev/null",
                "gc.auto=0", "maintenance.auto=false", "fetch.writeCommitGraph=false",
                "fetch.recurseSubmodules=false", "submodule.recurse=false",
                "core.bigFileThreshold=8m")


@dataclass
class Copied:
    objects: int = 0
    bytes: int = 0
    seconds: float = 0.0


def fetch(layout: Layout, gitdir: Path, wants: list[str], first: bool,
          seconds: float | None) -> Copied:
    """Copy `wants` and everything they reach that the store lacks from the repository at
    `gitdir`. `first`: the store has no state recorded yet (no negotiation to start from).
    Refusal when it took over `seconds`; StoreError when git failed."""
    started = time.monotonic()
    packs = layout.store / "objects" / "pack"
    before = _listing(packs)
    args = []
    for item in FETCH_CONFIG + (("fetch.negotiationAlgorithm=noop",) if first else ()):
        args += ["-c", item]
    args += ["fetch", "--quiet", "--no-write-fetch-head", "--no-tags", "--no-auto-gc",
             "--no-recurse-submodules", "--stdin"]
    if not first:
        args.append(f"--negotiation-tip={GIT_PREFIX}*")
    args += ["--", str(gitdir)]
    try:
        gitcli.run(layout, args, stdin="".join(f"{w}\n" for w in wants).encode(),
                   timeout=seconds)
    except StoreError as exc:
        _drop_partial(packs, before)
        if "did not finish" in str(exc):
            raise Refusal(f"copying the repository's objects took over {seconds:g} s "
                          "(git_timeout): not recorded") from None
        raise StoreError(f"the repository's objects could not be copied: "
                         f"{_printable(str(exc))}") from None
    copied = Copied(seconds=time.monotonic() - started)
    for name in set(_listing(packs)) - set(before):
        path = packs / name
        try:
            copied.bytes += path.stat().st_size
            if name.endswith(".idx"):
                copied.objects += _idx_count(path)
        except OSError:
            pass
    return copied


def _listing(packs: Path) -> list[str]:
    try:
        return [n for n in os.listdir(packs) if n.endswith((".pack", ".idx"))
                or n.startswith("tmp_")]
    except OSError:
        return []


def _drop_partial(packs: Path, before: list[str]) -> None:
    """Temporary files a killed fetch left (never a pack it finished)."""
    for name in set(_listing(packs)) - set(before):
        if name.startswith("tmp_"):
            try:
                os.unlink(packs / name)
            except OSError:
                pass


def _idx_count(path: Path) -> int:
    """Objects in a pack index (version 2: the last fan-out entry)."""
    with open(path, "rb") as f:
        head = f.read(8 + 256 * 4)
    if head[:4] != b"\xfftOc" or len(head) < 8 + 256 * 4:
        return 0
    return int.from_bytes(head[-4:], "big")


def _printable(text: str) -> str:
    line = " ".join(text.split())
    return "".join(c if c.isprintable() else "?" for c in line)[:300]
