"""The remotes this store knows: `rewind-remotes/<name>.json` in the store (0600).

A file of rewindfs's own rather than the store's git config: git would read
`remote.<name>.*` settings there (a fetch refspec, a push mirror) that rewindfs never
wants, and Hermes and people run git on the store. A record holds the name and the
URL only; no credential can be in it (names.check_url refuses them, also on reading a
file edited by hand). `<name>.state.json` keeps the outcome of the last push and
fetch, for `rewind status` and `rewind remote list`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from rewindfs.errors import InvalidInput, NotFound, RewindError, StoreError
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import file_lock, write_atomic
from rewindfs.store.objects.repo import Store
from rewindfs.store.remote.names import check_url, redact, tracking_prefix, validate_name


@dataclass(frozen=True)
class Remote:
    name: str
    url: str
    added_at: float = 0.0


def config_file(layout: Layout, name: str) -> Path:
    return layout.remotes_dir / f"{name}.json"


def state_file(layout: Layout, name: str) -> Path:
    return layout.remotes_dir / f"{name}.state.json"


def lock(layout: Layout, name: str):
    """Held by whatever pushes to, fetches from or removes remote `name`."""
    return file_lock(layout.lock_file(f"remote-{name}"))


def removed(layout: Layout, name: str):
    """For a push or fetch of remote `name` to see, as it runs, that `remote remove`
    took it away (it then ends at once: store.remote.deadline)."""
    path = config_file(layout, name)

    def gone() -> str | None:
        return None if path.exists() else f"remote {name} was removed meanwhile"

    return gone


def add(store: Store, name: str, url: str) -> Remote:
    validate_name(name)
    url = _absolute(check_url(url))
    store.ensure()
    layout = store.layout
    private.ensure_dir(layout.remotes_dir)
    with lock(layout, name):
        existing = _read(layout, name)
        if existing is not None:
            raise InvalidInput(f"remote {name!r} exists already ({redact(existing.url)}); "
                               f"`rewind remote remove {name}` first")
        remote = Remote(name, url, time.time())
        write_atomic(config_file(layout, name),
                     json.dumps({"url": remote.url, "added_at": remote.added_at}))
    return remote


def remove(store: Store, name: str) -> tuple[Remote, int]:
    """Forget remote `name` and what was fetched from it; (the remote, refs removed).

    Nothing on the remote itself changes. Its record goes first: a push or fetch of it
    running now sees that and ends at once (store.remote.deadline), so the lock taken
    next is never held by a remote that stopped answering."""
    validate_name(name)
    layout = store.layout
    remote = get(layout, name)
    config_file(layout, name).unlink(missing_ok=True)
    with lock(layout, name):
        removed = 0
        if store.exists():
            repo = store.repo
            for ref in list(repo.references.iterator()):
                if ref.name.startswith(f"refs/rewind/remotes/{name}/"):
                    try:
                        ref.delete()
                        removed += 1
                    except pygit2.GitError as exc:
                        raise StoreError(f"could not remove {ref.name}: {exc}") from exc
        state_file(layout, name).unlink(missing_ok=True)
    return remote, removed


def forget_fetched(store: Store, remote: str, machine: str, h16: str) -> int:
    """Forget one project fetched from `remote` (`rewind forget @REMOTE/NAME`): its mirror
    refs here; the remote keeps it (the next fetch brings it back). How many refs."""
    from rewindfs.store.history import forget_records

    layout = store.layout
    folder = f"refs/rewind/remotes/{remote}/m/{machine}/{h16}/"
    with lock(layout, remote):
        removed = 0
        for ref in list(store.repo.references.iterator()):
            if ref.name.startswith(folder):
                try:
                    ref.delete()
                    removed += 1
                except pygit2.GitError as exc:
                    raise StoreError(f"could not remove {ref.name}: {exc}") from exc
        forget_records(layout, f"{remote}/{machine}/{h16}")
    return removed


def get(layout: Layout, name: str) -> Remote:
    validate_name(name)
    found = _read(layout, name)
    if found is None:
        known = ", ".join(r.name for r in every(layout)) or "none yet"
        raise NotFound(f"no remote named {name!r} (known: {known}; "
                       f"`rewind remote add {name} URL` adds one)")
    return found


def every(layout: Layout) -> list[Remote]:
    try:
        names = sorted(p.name[:-5] for p in layout.remotes_dir.glob("*.json")
                       if not p.name.endswith(".state.json"))
    except OSError:
        return []
    found = []
    for name in names:
        try:
            remote = _read(layout, name)
        except RewindError:
            continue  # a damaged or unsafe record: `rewind remote list` names it
        if remote is not None:
            found.append(remote)
    return found


def _read(layout: Layout, name: str) -> Remote | None:
    path = config_file(layout, name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StoreError(f"remote record {path} is unreadable ({exc}); remove it and "
                         "add the remote again") from None
    url = data.get("url") if isinstance(data, dict) else None
    if not isinstance(url, str):
        raise StoreError(f"remote record {path} has no URL; remove it and add the remote again")
    added = data.get("added_at")
    return Remote(name, check_url(url), float(added) if isinstance(added, int | float) else 0.0)


def _absolute(url: str) -> str:
    """A local path is stored absolute (git runs in the store, not where it was typed)."""
    if "://" in url or (":" in url.split("/", 1)[0] and not os.path.exists(url)):
        return url
    return str(Path(url).expanduser().absolute())


def read_state(layout: Layout, name: str) -> dict[str, Any]:
    try:
        data = json.loads(state_file(layout, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(layout: Layout, name: str, kind: str, outcome: dict[str, Any]) -> None:
    """Remember how the last `kind` ("push" or "fetch") went (never raises: only a record)."""
    try:
        state = read_state(layout, name)
        state[kind] = {"time": time.time(), **outcome}
        if config_file(layout, name).exists():
            # Informational (`rewind remote list`), written on every push and fetch: not
            # worth two fsyncs each (read_state takes a file a power cut emptied).
            write_atomic(state_file(layout, name), json.dumps(state), durable=False)
    except OSError:
        pass


def tracking_refs(repo: pygit2.Repository, name: str, machine: str | None = None
                  ) -> dict[str, str]:
    """Local mirror refs of remote `name` (one machine's, or all) -> commit id."""
    prefix = tracking_prefix(name, machine)
    out = {}
    for ref in repo.references.iterator():
        if ref.name.startswith(prefix):
            try:
                out[ref.name] = str(ref.target)
            except (pygit2.GitError, ValueError):
                continue
    return out
