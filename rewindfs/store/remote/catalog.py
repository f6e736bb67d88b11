"""The projects remotes hold, as mirrored here: who pushed them, from where, and their names.

A remote project is known by its key (`<remote>/<machine>/<h16>`, which the history
functions take wherever a local project's h16 goes) and shown by a name unique
within its remote: the basename of its original path, as the mount names local
projects, with the pushing host (or machine id) added when two share a basename,
which is also how two sandboxes that checkpointed the same path stay apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath

import pygit2

from rewindfs.errors import InvalidInput, NotFound
from rewindfs.store.history.checkpoint import clamp_time
from rewindfs.store.objects.layout import REMOTES_PREFIX, Layout, split_remote_ref
from rewindfs.store.remote import records
from rewindfs.store.remote.machine import stored_id
from rewindfs.store.remote.names import CHAIN, META, key
from rewindfs.store.remote.plan import RECORD_NAME


@dataclass(frozen=True)
class RemoteProject:
    remote: str
    machine: str
    h16: str
    tip: str | None  # newest checkpoint (None: only labels or metadata were fetched)
    workdir: str | None  # the original path, on the machine that pushed it
    host: str | None
    last_touch: float  # the last checkpoint there
    own: bool  # pushed from this store

    @property
    def key(self) -> str:
        return key(self.remote, self.machine, self.h16)

    @property
    def basename(self) -> str:
        return PurePosixPath(self.workdir).name if self.workdir else self.h16

    def where(self) -> str:
        """`<path> (<host>)`, as listings show it."""
        return f"{self.workdir or self.h16} ({self.host or self.machine[:8]})"


def remote_projects(repo: pygit2.Repository, layout: Layout, name: str | None = None
                    ) -> list[RemoteProject]:
    """Every project mirrored from remote `name` (or from every remote), by remote and path."""
    refs: dict[tuple[str, str, str], dict[str, str]] = {}
    prefix = REMOTES_PREFIX + (f"{name}/" if name else "")
    for ref in repo.references.iterator():
        if not ref.name.startswith(prefix):
            continue
        parts = split_remote_ref(ref.name)
        if parts is None:
            continue
        try:
            target = str(ref.target)
        except (pygit2.GitError, ValueError):
            continue
        refs.setdefault(parts[:3], {})[parts[3]] = target
    mine = stored_id(layout)
    found = []
    for (remote, machine, h16), kinds in refs.items():
        record = _record(repo, kinds.get(META))
        found.append(RemoteProject(
            remote, machine, h16, kinds.get(CHAIN), records.workdir(record.get("workdir")),
            records.host(record.get("host")), _commit_time(repo, kinds.get(CHAIN)),
            machine == mine))
    return sorted(found, key=lambda p: (p.remote, p.workdir or "", p.host or "", p.machine))


def names(projects: list[RemoteProject]) -> dict[str, RemoteProject]:
    """Name -> project within one remote, unique and independent of listing order: the
    basename; `-<host>` added when two share it; `-<machine id>` when they share the host
    too (two sandboxes of one image)."""
    groups: dict[str, list[RemoteProject]] = {}
    for project in projects:
        groups.setdefault(project.basename, []).append(project)
    out: dict[str, RemoteProject] = {}
    for base, group in sorted(groups.items()):
        hosts = Counter(p.host for p in group)
        for project in sorted(group, key=lambda p: (p.machine, p.h16)):
            if len(group) == 1:
                name = base
            elif project.host and hosts[project.host] == 1:
                name = f"{base}-{project.host}"
            else:
                name = f"{base}-{project.machine[:8]}"
            if name in out:  # one machine, two paths with one basename and host
                name = f"{name}-{project.h16[:8]}"
            out[name] = project
    return out


def find(repo: pygit2.Repository, layout: Layout, spec: str) -> RemoteProject:
    """The project `@<remote>/<name>` (a name as `names` gives it, as in the mount)."""
    remote, _, name = spec.removeprefix("@").partition("/")
    if not remote or not name or "/" in name.strip("/"):
        raise InvalidInput(f"expected @REMOTE/PROJECT (as in the mount), got {spec!r}")
    named = names(remote_projects(repo, layout, remote))
    found = named.get(name.strip("/"))
    if found is None:
        known = ", ".join(sorted(named)) or "none (`rewind fetch " + remote + "` first?)"
        raise NotFound(f"no project {name!r} fetched from {remote} (known: {known})")
    return found


def same_path(repo: pygit2.Repository, layout: Layout, remote: str, workdir: str
              ) -> RemoteProject:
    """The project remote `remote` holds for path `workdir`, from another machine (from this
    one when no other pushed it); several machines: refused, naming them."""
    held = [p for p in remote_projects(repo, layout, remote) if p.workdir == workdir]
    others = [p for p in held if not p.own] or held
    if not others:
        raise NotFound(f"{remote} holds no project at {workdir} (`rewind list --remote "
                       f"{remote}` shows what it holds; `rewind fetch {remote}` updates it)")
    if len(others) > 1:
        named = {p.key: n for n, p in names(remote_projects(repo, layout, remote)).items()}
        choices = ", ".join(f"-C @{remote}/{named[p.key]} ({p.host})" for p in others)
        raise InvalidInput(f"{remote} holds {workdir} from {len(others)} machines: "
                           f"use {choices}")
    return others[0]


def _record(repo: pygit2.Repository, meta: str | None) -> dict:
    """The project record a remote holds (records.validate says what of it is usable)."""
    if meta is None:
        return {}
    try:
        tree = repo[meta].peel(pygit2.Tree)
        oid = tree[RECORD_NAME].id
        if repo.odb.read_header(oid)[1] > records.MAX_RECORD:
            return {}  # read no further: a record is a few hundred bytes
        return records.parse(repo[oid].data)
    except (KeyError, ValueError, pygit2.GitError):
        return {}


def _commit_time(repo: pygit2.Repository, commit: str | None) -> float:
    try:
        return float(clamp_time(repo[commit].commit_time)) if commit else 0.0
    except (KeyError, ValueError, pygit2.GitError):
        return 0.0


