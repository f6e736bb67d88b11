"""What the store holds per project, read in one pass over its refs.

`labels_by_commit` scans every ref once per project; with many projects that
repeats, so maintenance groups the label refs of all projects in one scan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pygit2

from rewindfs.errors import StoreError
from rewindfs.store.history.chain import walk
from rewindfs.store.history.labels import left_out
from rewindfs.store.objects import damage, notices
from rewindfs.store.objects.layout import LABELS_PREFIX, REFS_PREFIX, Layout, layout_of


@dataclass
class History:
    """A project's kept checkpoints: its chain down to the boundary, plus pinned labels."""

    h16: str
    chain: list[pygit2.Commit]  # newest first
    labelled: dict[str, list[str]] = field(default_factory=dict)  # commit id -> labels

    @property
    def pinned(self) -> list[pygit2.Oid]:
        """Labelled checkpoints the chain no longer reaches (kept by their label)."""
        in_chain = {str(c.id) for c in self.chain}
        return [pygit2.Oid(hex=c) for c in self.labelled if c not in in_chain]

    @property
    def unlabelled(self) -> list[pygit2.Commit]:
        """Chain checkpoints without a label: the ones max_snapshots and the size cap count."""
        return [c for c in self.chain if str(c.id) not in self.labelled]

    @property
    def count(self) -> int:
        return len(self.chain) + len(self.pinned)

    def kept_commits(self) -> list[pygit2.Oid]:
        return [c.id for c in self.chain] + self.pinned


def project_hashes(repo: pygit2.Repository) -> list[str]:
    return sorted(n[len(REFS_PREFIX):] for n in repo.references if n.startswith(REFS_PREFIX))


def labels(repo: pygit2.Repository) -> dict[str, dict[str, list[str]]]:
    """{h16: {commit id: [labels]}} for every project, from one scan of the refs."""
    out: dict[str, dict[str, list[str]]] = {}
    for name in repo.references:
        if not name.startswith(LABELS_PREFIX):
            continue
        h16, _, label = name[len(LABELS_PREFIX):].partition("/")
        try:
            target = str(repo.references[name].peel(pygit2.Commit).id)
        except (pygit2.GitError, KeyError, ValueError):
            left_out(repo, name)
            continue
        out.setdefault(h16, {}).setdefault(target, []).append(label)
    return out


def histories(repo: pygit2.Repository, h16s: list[str] | None = None) -> dict[str, History]:
    """History of each project (every project with a ref when `h16s` is None)."""
    grouped = labels(repo)
    wanted = project_hashes(repo) if h16s is None else h16s
    return {h: History(h, _chain(repo, h), grouped.get(h, {})) for h in wanted}


def _chain(repo: pygit2.Repository, h16: str) -> list[pygit2.Commit]:
    """The project's chain; a broken ref reads as empty (maintenance must get past it)."""
    ref = Layout.project_ref(h16)
    try:
        return walk(repo, ref)
    except StoreError as exc:
        found = damage.ref_problem(layout_of(repo.path), ref)
        why = f"{found.path} ({found.problem})" if found is not None else str(exc)
        notices.notice(f"the checkpoints of project {h16} are unreadable and left out: {why}")
        return []
