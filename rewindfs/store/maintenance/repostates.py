"""The project repositories' states (store.projectgit) as part of their checkpoints, for
maintenance: a checkpoint dropped by a prune, the size cap or a removal frees the state
only it named.

* Before gc, every project's keeper (history.gitkeep, `refs/rewind/git/<h16>`) is rebuilt
  from the checkpoints still kept, so gc frees the states of the ones that went.
* The size cap measures a plan with the states its kept checkpoints name in place of the
  keepers, and prices a dropped checkpoint with what its state alone holds.
"""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from rewindfs.errors import Busy, RewindError
from rewindfs.store.history import gitkeep
from rewindfs.store.history.trailers import parse_message
from rewindfs.store.objects import gitcli
from rewindfs.store.objects.layout import GIT_PREFIX, Layout
from rewindfs.store.objects.locks import file_lock

LOCK_WAIT = 0.2  # seconds: a project being checkpointed keeps its keeper as it is


def rebuild_keepers(layout: Layout, repo: pygit2.Repository) -> None:
    """Each keeper rebuilt under its project's lock (a project busy now is left as it is:
    it keeps a state too many, never one too few)."""
    for name in [n for n in repo.references if n.startswith(GIT_PREFIX)]:
        h16 = name[len(GIT_PREFIX):]
        try:
            with file_lock(layout.lock_file(h16), timeout=LOCK_WAIT):
                gitkeep.rebuild(repo, h16)
        except (Busy, RewindError, pygit2.GitError):
            continue


def state_of(commit: pygit2.Commit) -> str | None:
    state = gitkeep.state_of(parse_message(commit.message)[1])
    return None if state in (None, gitkeep.NONE) else state


def tips_for(refs: Iterable[str], kept: Iterable[pygit2.Commit]) -> list[str]:
    """What a measurement starts from: `refs` but the keepers, plus the states the `kept`
    checkpoints name."""
    states = {s for c in kept if (s := state_of(c))}
    return [r for r in refs if not r.startswith(GIT_PREFIX)] + sorted(states)


def only_its_state(layout: Layout, commit: pygit2.Commit, newer: Iterable[pygit2.Commit]
                   ) -> int:
    """On-disk bytes the state `commit` names holds that no `newer` checkpoint's state
    does (0: it names none, or one a newer checkpoint names too)."""
    state = state_of(commit)
    others = {s for c in newer if (s := state_of(c))}
    if state is None or state in others:
        return 0
    lines = [state, *(f"^{s}" for s in sorted(others))]
    try:
        out = gitcli.run(layout, ["rev-list", "--objects", "--disk-usage", "--stdin"],
                         stdin="".join(f"{line}\n" for line in lines).encode())
    except RewindError:
        return 0
    return int(out.strip() or 0)
