"""What a push sends for one project: each remote ref, the value it has (as last seen
here) and the value it gets.

Nothing here talks to the remote: a plan is built from the project's refs and from
the mirror of this machine's folder on the remote (names.tracking), then pushed as a
whole by push. The rules, so a push never takes anything away unless asked (`prune`):

* checkpoints: carried copies (see carry) of the checkpoints the remote lacks, stacked
  on the remote's newest; a checkpoint the remote has, or one like it (`rewind delete`
  rewrites later checkpoints with new ids), is not sent again;
* labels: set or moved to the copies of what they name here; one removed here stays
  there;
* notes: the remote's notes plus those of every checkpoint here, keyed by the copies;
* meta: the registry record (path, host, times) and the step log, sent when changed.

With `prune` the remote becomes a mirror of what is here: the history is carried
afresh from the oldest checkpoint kept here (the same ids again when nothing was
pruned or deleted), notes and labels are exactly the local ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import FileMode

from rewindfs.store.history.chain import walk
from rewindfs.store.history.labels import labels_by_commit
from rewindfs.store.history.metadata import notes
from rewindfs.store.history.projects import read_record
from rewindfs.store.history.shallow import boundaries
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock
from rewindfs.store.remote.carry import carry, likeness, origin
from rewindfs.store.remote.machine import host_name
from rewindfs.store.remote.names import CHAIN, LABELS, META, NOTES, key, remote_base, tracking

META_FORMAT = 1
RECORD_NAME, STEPS_NAME = "project.json", "steps.jsonl"


@dataclass
class ProjectPlan:
    h16: str
    # remote ref -> (value there as last seen here, or None: absent; new value, or None:
    # delete it)
    updates: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    carried: int = 0  # checkpoints sent for the first time
    copies: dict[str, str] = field(default_factory=dict)  # checkpoint here -> its copy
    oldest_here: str | None = None  # the oldest checkpoint of the chain here

    def change(self, ref: str, old: str | None, new: str | None) -> None:
        if old != new:
            self.updates[ref] = (old, new)


def plan_project(repo: pygit2.Repository, layout: Layout, name: str, machine: str, h16: str,
                 mirror: dict[str, str], *, prune: bool = False) -> ProjectPlan:
    """The plan for project `h16`; `mirror`: this machine's tracking refs -> ids."""
    base = remote_base(machine, h16)
    seen = {ref: mirror.get(tracking(name, ref)) for ref in _refs_of(base, name, mirror)}
    plan = ProjectPlan(h16)
    chain = walk(repo, Layout.project_ref(h16))
    plan.oldest_here = str(chain[-1].id) if chain else None
    labels = labels_by_commit(repo, h16)

    tip = None if prune else seen.get(base + CHAIN)
    by_origin: dict[str, tuple[str, tuple]] = {}
    by_likeness: dict[tuple, str] = {}
    if not prune:
        sent = walk(repo, tracking(name, base + CHAIN)) if tip else []
        sent += [repo[oid] for ref, oid in seen.items() if ref.startswith(base + LABELS) and oid]
        for copy in sent:
            alike = likeness(copy)
            by_likeness.setdefault(alike, str(copy.id))
            if (was := origin(copy)) is not None:
                by_origin.setdefault(was, (str(copy.id), alike))

    def known(commit: pygit2.Commit) -> str | None:
        # A copy's Rewind-Origin is the pusher's word, and the remote is anyone's to write:
        # it counts only when the copy holds what the checkpoint holds (tree, time,
        # message), or a forged "copy" would stand in for a checkpoint never sent.
        alike = likeness(commit)
        claimed = by_origin.get(str(commit.id))
        if claimed is not None and claimed[1] == alike:
            return claimed[0]
        return by_likeness.get(alike)

    for commit in reversed(chain):  # oldest first: each copy stacks on the one before
        copy = known(commit)
        if copy is None:
            copy = tip = carry(repo, commit, tip)
            plan.carried += 1
        plan.copies[str(commit.id)] = copy
    plan.change(base + CHAIN, seen.get(base + CHAIN), tip)

    for commit_id in labels:  # labelled checkpoints pruned out of the chain: copies of their own
        if commit_id not in plan.copies:
            commit = repo[commit_id]
            plan.copies[commit_id] = known(commit) or carry(repo, commit, None)
    wanted = {f"{base}{LABELS}{label}": plan.copies[commit_id]
              for commit_id, names in labels.items() for label in names}
    if prune:
        for ref, old in seen.items():
            if ref.startswith(base + LABELS) and ref not in wanted:
                plan.change(ref, old, None)
    for ref, new in wanted.items():
        plan.change(ref, seen.get(ref), new)

    _plan_notes(repo, plan, key(name, machine, h16), base, seen.get(base + NOTES), prune)
    _plan_meta(repo, layout, plan, machine, base, seen.get(base + META))
    return plan


def plan_removal(base: str, name: str, mirror: dict[str, str]) -> ProjectPlan:
    """Every ref of a project that is gone here (`--prune` only)."""
    plan = ProjectPlan(base.rstrip("/").rsplit("/", 1)[1])
    for ref in _refs_of(base, name, mirror):
        plan.change(ref, mirror[tracking(name, ref)], None)
    return plan


def _refs_of(base: str, name: str, mirror: dict[str, str]) -> list[str]:
    """The remote refs under `base` this store has a mirror of."""
    local = tracking(name, base)
    return [base + ref[len(local):] for ref in mirror if ref.startswith(local)]


def _plan_notes(repo: pygit2.Repository, plan: ProjectPlan, mirrored: str, base: str,
                old: str | None, prune: bool) -> None:
    """`mirrored`: the key of this project's copy on the remote, as mirrored here."""
    entries: dict[str, pygit2.Oid] = {}
    if old is not None and not prune:
        entries.update(notes.blobs(repo, mirrored))
    for commit_id, blob in notes.blobs(repo, plan.h16).items():
        if commit_id in plan.copies:
            entries[plan.copies[commit_id]] = blob
    if old is not None and _tree_of(repo, old) == str(notes.tree_of(repo, entries)):
        return
    if old is None and not entries:
        return
    plan.change(base + NOTES, old, str(notes.commit_of(repo, entries, 0)))


def _plan_meta(repo: pygit2.Repository, layout: Layout, plan: ProjectPlan, machine: str,
               base: str, old: str | None) -> None:
    """The registry record, as another machine shows the project, and the step log.

    Not the time of the last checkpoint (the newest copy's time says it): a record that
    changes with every checkpoint would cost every push one more ref and three objects."""
    record = read_record(layout, plan.h16)
    created = record.created_at if record else None
    doc = {"format": META_FORMAT, "h16": plan.h16, "machine": machine, "host": host_name(),
           "workdir": str(record.workdir) if record else None, "created_at": created}
    builder = repo.TreeBuilder()
    builder.insert(RECORD_NAME, repo.create_blob(json.dumps(doc, sort_keys=True).encode()),
                   FileMode.BLOB)
    steps = _step_log(layout, plan.h16)
    if steps:
        builder.insert(STEPS_NAME, repo.create_blob(steps), FileMode.BLOB)
    tree = builder.write()
    if old is not None and _tree_of(repo, old) == str(tree):
        return
    sig = pygit2.Signature("rewindfs", "rewindfs@local", int(created or 0), 0)
    commit = repo.create_commit(None, sig, sig, "rewindfs project record\n", tree, [])
    plan.change(base + META, old, str(commit))


def _step_log(layout: Layout, h16: str) -> bytes:
    path = layout.step_log(h16)
    if not path.exists():
        return b""
    with file_lock(layout.lock_file(f"{h16}.steps"), shared=True):
        try:
            return path.read_bytes()
        except OSError:
            return b""


def _tree_of(repo: pygit2.Repository, commit: str) -> str | None:
    try:
        return str(repo[commit].peel(pygit2.Commit).tree_id)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def mirrored_boundary(repo: pygit2.Repository, plan: ProjectPlan) -> str | None:
    """The copy of this project's oldest kept checkpoint, when that one is a prune boundary
    here and its copy has a parent: made a boundary too, so the copies of what pruning
    dropped here are dropped here as well (the remote keeps them)."""
    oldest = plan.oldest_here
    if oldest is None or oldest not in boundaries(repo):
        return None
    copy = plan.copies.get(oldest)
    if copy is None or copy in boundaries(repo):
        return None
    try:
        return copy if repo[copy].parent_ids else None
    except (KeyError, ValueError):
        return None
