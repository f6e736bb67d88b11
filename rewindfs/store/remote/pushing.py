"""`rewind push`: this machine's checkpoints, labels, notes and project records to a remote.

One atomic `git push` per run: every ref it changes carries a lease (the value this
store last saw there, `--force-with-lease=<ref>:<value>`), so the remote takes all of
it or none, and only if nobody changed those refs since. Only this machine's folder
(`refs/rewind/m/<machine>/`) is ever written. A push killed midway leaves the remote
as it was (git receives into a quarantine and moves refs last) or, killed after the
remote moved its refs, ahead of this store's mirror: the next push's leases then fail,
it fetches this machine's folder, finds its own copies there (carried copies have
stable ids) and sends only the rest. A folder someone rewrote by force is treated the
same way: what it holds is kept, and whatever is missing is stacked on top.

After a push the mirror refs are moved to what was sent, and a pruned project's prune
boundary is mirrored onto its copies (plan.mirrored_boundary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pygit2

from rewindfs.errors import NotFound, RemoteFailed, StoreError
from rewindfs.store.history.shallow import add_boundaries
from rewindfs.store.objects.layout import REFS_PREFIX, Layout, split_remote_ref
from rewindfs.store.objects.repo import Store
from rewindfs.store.remote import deadline, gitremote, remotes
from rewindfs.store.remote.fetching import mirror
from rewindfs.store.remote.machine import machine_id
from rewindfs.store.remote.names import (
    fetch_refspec,
    redact,
    remote_base,
    remote_folder,
    tracking,
)
from rewindfs.store.remote.plan import ProjectPlan, mirrored_boundary, plan_project, plan_removal

ATTEMPTS = 3  # a lease lost twice in a row is someone else pushing as this machine


@dataclass
class PushReport:
    remote: str
    url: str  # redacted
    projects: dict[str, int] = field(default_factory=dict)  # h16 -> checkpoints carried
    refs: int = 0  # remote refs changed
    removed: list[str] = field(default_factory=list)  # h16s removed from the remote (prune)

    @property
    def checkpoints(self) -> int:
        return sum(self.projects.values())

    def to_dict(self) -> dict:
        return {"remote": self.remote, "url": self.url, "refs": self.refs,
                "checkpoints": self.checkpoints, "projects": self.projects,
                "removed": self.removed}


def push(store: Store, name: str, projects: list[str] | None = None, *, prune: bool = False,
         progress: bool = False, interactive: bool = True,
         stall: float = deadline.STALL) -> PushReport:
    """Push `projects` (h16s; None: every project) to remote `name`; `stall`: seconds git
    may make no progress before the push fails (store.remote.deadline)."""
    layout = store.layout
    remote = remotes.get(layout, name)
    if not store.exists():
        raise NotFound("nothing to push: the checkpoint store is empty")
    machine = machine_id(layout)
    report = PushReport(name, redact(remote.url))
    talk = _Talk(layout, name, remote.url, machine, progress, interactive, stall)
    with remotes.lock(layout, name):
        try:
            checked = False
            for attempt in range(ATTEMPTS + 1):
                repo = store.repo
                own = remotes.tracking_refs(repo, name, machine)
                plans = _plans(repo, layout, name, machine, projects, own, prune)
                updates = {ref: change for p in plans for ref, change in p.updates.items()}
                if not updates:
                    # Planned from what this store last saw there: make sure the remote
                    # still holds it (emptied, rewritten, its refs lost), else look again.
                    if checked or talk.holds(own):
                        break
                    checked = True
                    talk.look_again()
                    continue
                outcome = talk.send(updates)
                results = gitremote.push_results(outcome.stdout)
                if outcome.code == 0:
                    _mirror(repo, name, updates)
                    _mirror_boundaries(repo, layout, plans)
                    report.refs = len(updates)
                    break
                if attempt + 1 < ATTEMPTS and gitremote.lost_race(outcome, results):
                    # The remote moved since this store last looked (a push killed after
                    # it landed, another copy of this store pushing right now, someone
                    # else): look again and plan afresh.
                    talk.look_again()
                    continue
                raise RemoteFailed(f"push to {name} failed: "
                                   f"{_why(outcome, results)}")
            report.projects = {p.h16: p.carried for p in plans if p.carried}
            report.removed = [p.h16 for p in plans if _removes_project(p)]
        except RemoteFailed as exc:
            remotes.record(layout, name, "push", {"ok": False, "error": str(exc)})
            raise
    remotes.record(layout, name, "push", {"ok": True, "refs": report.refs,
                                          "checkpoints": report.checkpoints})
    return report


class _Talk:
    """What one push says to the remote: each git run watched (deadline), ended when
    `remote remove` takes the remote away meanwhile."""

    def __init__(self, layout: Layout, name: str, url: str, machine: str, progress: bool,
                 interactive: bool, stall: float):
        self.layout, self.name, self.url, self.machine = layout, name, url, machine
        self.progress, self.interactive, self.stall = progress, interactive, stall
        self.stop = remotes.removed(layout, name)

    def send(self, updates: dict[str, tuple[str | None, str | None]]) -> gitremote.Outcome:
        try:
            return _send(self.layout, self.url, updates, self.progress, self.interactive,
                         self.stall, self.stop)
        except deadline.Stalled as exc:
            raise RemoteFailed(f"push to {self.name} failed: {exc}") from None

    def look_again(self) -> None:
        """Mirror what the remote holds of this machine's folder now."""
        mirror(self.layout, self.url, fetch_refspec(self.name, self.machine), progress=False,
               interactive=self.interactive, what=f"push to {self.name}", stall=self.stall,
               stop=self.stop)

    def holds(self, own: dict[str, str]) -> bool:
        """Whether the remote's refs of this machine are the ones mirrored here."""
        try:
            outcome = gitremote.run(
                self.layout, ["ls-remote", "--", self.url, remote_folder(self.machine)],
                interactive=self.interactive, stall=self.stall, stop=self.stop)
        except deadline.Stalled as exc:
            raise RemoteFailed(f"push to {self.name} failed: {exc}") from None
        if outcome.code != 0:
            raise RemoteFailed(f"push to {self.name} failed: "
                               f"{gitremote.reason(outcome.stderr, f'git exit {outcome.code}')}")
        there = {}
        for line in outcome.stdout.splitlines():
            oid, _, ref = line.partition("\t")
            there[tracking(self.name, ref)] = oid
        return there == own


def _plans(repo: pygit2.Repository, layout: Layout, name: str, machine: str,
           projects: list[str] | None, own: dict[str, str], prune: bool) -> list[ProjectPlan]:
    here = sorted(ref[len(REFS_PREFIX):] for ref in repo.references
                  if ref.startswith(REFS_PREFIX))
    wanted = here if projects is None else [h for h in projects if h in here]
    plans = [plan_project(repo, layout, name, machine, h16, own, prune=prune) for h16 in wanted]
    if prune:
        there = {parts[2] for ref in own if (parts := split_remote_ref(ref)) is not None}
        gone = there - set(here)
        if projects is not None:
            gone &= set(projects)
        plans += [plan_removal(remote_base(machine, h16), name, own) for h16 in sorted(gone)]
    if projects is not None and not plans:
        raise NotFound("no checkpoints to push for that project")
    return plans


def _send(layout: Layout, url: str, updates: dict[str, tuple[str | None, str | None]],
          progress: bool, interactive: bool, stall: float,
          stop: Callable[[], str | None]) -> gitremote.Outcome:
    leases = [f"--force-with-lease={ref}:{old or ''}" for ref, (old, _) in sorted(updates.items())]
    specs = [f"{new or ''}:{ref}" for ref, (_, new) in sorted(updates.items())]
    verbosity = "--progress" if progress else "--quiet"
    args = ["push", "--porcelain", "--atomic", verbosity, *leases, "--", url, *specs]
    outcome = gitremote.run(layout, args, progress=progress, interactive=interactive,
                            stall=stall, stop=stop)
    if outcome.code != 0 and "does not support --atomic" in outcome.stderr:
        # An old server: each ref still moves only under its lease, one by one.
        args.remove("--atomic")
        outcome = gitremote.run(layout, args, progress=progress, interactive=interactive,
                                stall=stall, stop=stop)
    return outcome


def _why(outcome: gitremote.Outcome, results: dict[str, gitremote.RefResult]) -> str:
    refused = [r.summary for r in results.values() if not r.ok and "atomic" not in r.summary]
    said = gitremote.reason(outcome.stderr, "")
    if refused:
        # git's summary ("pre-receive hook declined"), and the remote's own reason when it
        # gave one (its hook's words: shown, never obeyed, cli.output.human.visible)
        why = refused[0].strip("[]")
        return f"{why}: {said}" if said.startswith("remote: ") else why
    return said or f"git exit {outcome.code}"


def _mirror(repo: pygit2.Repository, name: str,
            updates: dict[str, tuple[str | None, str | None]]) -> None:
    """Move the mirror refs to what the remote now holds."""
    try:
        for ref, (_, new) in updates.items():
            local = tracking(name, ref)
            if new is None:
                found = repo.references.get(local)
                if found is not None:
                    found.delete()
            else:
                repo.references.create(local, pygit2.Oid(hex=new), force=True)
    except pygit2.GitError as exc:
        # The remote has it all; the next push finds that out (its leases fail) and heals.
        raise StoreError(f"pushed, but could not record it here: {exc}") from exc


def _mirror_boundaries(repo: pygit2.Repository, layout: Layout, plans: list[ProjectPlan]) -> None:
    found = {copy for p in plans if (copy := mirrored_boundary(repo, p)) is not None}
    if found:
        add_boundaries(repo, layout, found)


def _removes_project(plan: ProjectPlan) -> bool:
    return bool(plan.updates) and all(new is None for _, new in plan.updates.values())
