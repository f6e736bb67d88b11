"""A recorded repository state in words: what `rewind show` lists (HEAD, the branch tips,
how many tags, stashes, remote-tracking refs), and how the repository differs from it
now (the line a plain restore says, naming `--git`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pygit2

from rewindfs.errors import StoreError
from rewindfs.store.history import gitkeep

SHOWN = 20  # branches listed before "... and N more"


def describe(repo: pygit2.Repository, trailers: dict[str, str]) -> dict[str, Any] | None:
    """What a checkpoint (its trailers) recorded of the repository; None: nothing."""
    state = gitkeep.state_of(trailers)
    if state is None:
        return None
    if state == gitkeep.NONE:
        return {"state": None, "repository": False}
    from rewindfs.store.projectgit import statetree  # (a checkpoint that recorded one)

    try:
        found = statetree.load(repo, state)
    except StoreError as exc:
        return {"state": state, "repository": True, "error": str(exc)}
    refs = found.refs
    stashes = len((found.stash_log or b"").splitlines()) or int("refs/stash" in refs)
    return {"state": state, "repository": True, "head": head_text(found.head),
            "branches": found.branches(),
            "tags": sum(n.startswith("refs/tags/") for n in refs),
            "remote_refs": sum(n.startswith("refs/remotes/") for n in refs),
            "stashes": stashes, "refs": len(refs), "index": found.index is not None}


def lines(described: dict[str, Any]) -> list[str]:
    if not described["repository"]:
        return ["repository: none (.git did not exist)"]
    if "error" in described:
        return [f"repository: {described['error']}"]
    branches = described["branches"]
    shown = ", ".join(f"{name} {tip[:8]}" for name, tip in sorted(branches.items())[:SHOWN])
    more = f" ... and {len(branches) - SHOWN} more" if len(branches) > SHOWN else ""
    return [f"repository: HEAD {described['head']}; {described['refs']} refs, "
            f"{described['tags']} tag(s), {described['stashes']} stash(es), "
            f"{described['remote_refs']} remote-tracking"
            + ("" if described["index"] else ", no index"),
            f"  branches: {shown or 'none'}{more}"]


def difference(repo: pygit2.Repository, trailers: dict[str, str], workdir: Path,
               reference: str) -> str | None:
    """One line when the project's `.git` is missing or its refs or HEAD differ from what
    the checkpoint (its trailers; `reference`: how the person named it) recorded, naming
    `--git`; None when they agree, or nothing was recorded and `.git` is there."""
    gitdir = workdir / ".git"
    state = gitkeep.state_of(trailers)
    fix = f"`rewind restore {reference} --git`"
    if not os.path.lexists(gitdir):
        if state is None or state == gitkeep.NONE:
            return (f"the repository ({gitdir}) is missing, and checkpoint {reference} "
                    "did not record it (`rewind show` names the checkpoints that did)")
        return f"the repository ({gitdir}) is missing: {fix} brings it back as it was then"
    if state is None or state == gitkeep.NONE:
        return None
    from rewindfs.store.projectgit import reading, statetree  # (one was recorded)
    from rewindfs.store.projectgit.bounds import Refusal

    try:
        then = statetree.load(repo, state)
        now = reading.current_refs(gitdir)
    except (StoreError, Refusal):
        return None
    if now.refs == then.refs and now.head == then.head:
        return None
    changed = sorted(n for n in set(now.refs) | set(then.refs)
                     if now.refs.get(n) != then.refs.get(n))
    what = f"{len(changed)} ref(s) ({', '.join(_short(n) for n in changed[:3])}" \
        + (", ..." if len(changed) > 3 else "") + ")" if changed else "HEAD"
    return (f"the repository's refs differ from checkpoint {reference}'s: {what} moved, "
            f"appeared or went since; {fix} sets them back")


def refs_now(gitdir: Path) -> dict[str, str]:
    """The refs of the repository at `gitdir` now (Refusal when it cannot be read)."""
    from rewindfs.store.projectgit import reading

    return reading.current_refs(gitdir).refs


def head_text(head: str) -> str:
    if head.startswith("ref:refs/heads/"):
        return "-> " + head[len("ref:refs/heads/"):]
    return "-> " + head[4:] if head.startswith("ref:") else f"detached at {head[:8]}"


def _short(name: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/", "refs/remotes/"):
        if name.startswith(prefix):
            return name[len(prefix):] if prefix == "refs/heads/" else name[5:]
    return name
