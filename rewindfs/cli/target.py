"""Which project's history a command reads: a local one, or one fetched from a remote.

    -C DIR                the project around DIR (the default: around the cwd)
    -C @NAME/PROJECT      a project fetched from remote NAME, by its name in the mount
    --remote NAME         the project at the same path as this one, as NAME holds it
                          (pushed from another machine or sandbox)
    (neither, and an id)  a checkpoint id (8+ hex digits, as `rewind list --all-projects`
                          shows it) that is not of the project here: the one project,
                          local or fetched, that holds it

A fetched project is read through its key (`<remote>/<machine>/<h16>`), which the
store's history functions take wherever a local project's hash goes; its `workdir` is
the local directory files are compared with, restored into or resolved against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rewindfs.errors import InvalidInput, NotFound
from rewindfs.store import project_hash

if TYPE_CHECKING:  # the remotes' modules load only for a command that names one
    from rewindfs.store.remote import catalog

remote_option = click.option(
    "--remote", metavar="NAME",
    help="This project as remote NAME holds it (the same path, pushed from another machine; "
         "`rewind fetch NAME` first).")


@dataclass(frozen=True)
class Target:
    key: str  # the local project's hash, or a fetched project's key
    workdir: Path  # the local directory of that path (it may not exist here)
    fetched: catalog.RemoteProject | None = None
    spec: str | None = None  # a fetched project's `@NAME/PROJECT`
    by_id: bool = False  # found as the holder of a checkpoint id, not named by the command

    @property
    def title(self) -> str:
        """How listings and messages name it."""
        if self.fetched is None:
            return str(self.workdir)
        found = self.fetched
        return f"{found.workdir or found.h16} on {found.host or found.machine[:8]} ({self.spec})"

    def describe(self) -> dict[str, object]:
        """What --json says about where it comes from."""
        found = self.fetched
        if found is None:
            return {"directory": str(self.workdir)}
        return {"directory": found.workdir, "remote": found.remote, "host": found.host,
                "machine": found.machine, "name": self.spec}


def is_remote_spec(app, given: str | None) -> bool:
    """`@NAME/...` where NAME is a remote this store knows (else it is a path)."""
    if not given or not given.startswith("@") or "/" not in given:
        return False
    name = given[1:].split("/", 1)[0]
    from rewindfs.store.remote import remotes

    return any(r.name == name for r in remotes.every(app.store.layout))


def resolve(app, given: str | None, remote: str | None = None,
            reference: str | None = None) -> Target:
    """The project a command reads; with neither -C nor --remote, a checkpoint id in
    `reference` that the project here does not hold names the project that does."""
    if is_remote_spec(app, given):
        if remote:
            raise click.UsageError("give the remote once: -C @NAME/PROJECT or --remote NAME")
        from rewindfs.store.remote import catalog

        found = catalog.find(_repo(app, given), app.store.layout, given)
        return _fetched(found, given.split("/", 1)[1].strip("/"))
    workdir = app.project_dir(given)
    if remote:
        from rewindfs.store.remote import catalog, remotes

        remotes.get(app.store.layout, remote)  # an unknown name says so, with the known ones
        found = catalog.same_path(_repo(app, remote), app.store.layout, remote, str(workdir))
        return fetched(app, remote, own=True, only=found.key)[0]
    here = Target(project_hash(workdir), workdir)
    if given is None and reference is not None and ID.match(reference):
        return holder_of(app, here, reference.lower())
    return here


ID = re.compile(r"^[0-9a-fA-F]{8,40}$")


def holder_of(app, here: Target, commit: str) -> Target:
    """The project holding checkpoint `commit` (an id or a prefix of one): `here` when it
    does (or when none does: the command then says it is no checkpoint here), else the
    one other project, local or fetched, that does."""
    if not app.store.exists():
        return here
    from rewindfs.store.history import holding, projects

    repo = app.store.repo
    if holding(repo, [here.key], commit):
        return here
    local = {r.h16: Path(r.workdir) for r in projects.list_records(app.store.layout)}
    others = [Target(h16, workdir, by_id=True) for h16, workdir in local.items()
              if h16 != here.key]
    others += [replace(t, by_id=True) for t in fetched(app, own=True)]
    found = holding(repo, [t.key for t in others], commit)
    chosen = [t for t in others if t.key in found]
    if len(chosen) > 1:
        raise InvalidInput(f"checkpoint {commit} is in {len(chosen)} projects "
                           f"({', '.join(t.title for t in chosen)}): name one with -C")
    return chosen[0] if chosen else here


def fetched(app, remote: str | None = None, *, own: bool, only: str | None = None
            ) -> list[Target]:
    """Projects fetched from `remote` (every remote), by remote and path; `own`: also the
    copies of this store's own projects."""
    if not app.store.exists():
        return []
    from rewindfs.store.remote import catalog

    everything = catalog.remote_projects(app.store.repo, app.store.layout, remote)
    out = []
    for name in sorted({p.remote for p in everything}):
        named = catalog.names([p for p in everything if p.remote == name])
        for label, found in named.items():
            if (own or not found.own) and (only is None or found.key == only):
                out.append(_fetched(found, label))
    return sorted(out, key=lambda t: (t.fetched.remote, t.fetched.workdir or "", t.spec))


def _fetched(found: catalog.RemoteProject, label: str) -> Target:
    # A record without a usable path (store.remote.records) gets one that is absolute and
    # exists nowhere: nothing is ever resolved against the current directory.
    where = Path(found.workdir) if found.workdir else Path("/", f".rewind-no-path-{found.h16}")
    return Target(found.key, where, found, f"@{found.remote}/{label}")


def _repo(app, what: str):
    if not app.store.exists():
        raise NotFound(f"nothing fetched yet for {what} (`rewind fetch NAME`)")
    return app.store.repo
