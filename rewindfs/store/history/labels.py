"""Named checkpoints: `refs/rewind/labels/<h16>/<label>` points at the checkpoint.

A label ref also keeps its checkpoint reachable, so git gc never drops it.
"""

from __future__ import annotations

import os
import re

import pygit2

from rewindfs.errors import InvalidInput, NotFound, StoreError
from rewindfs.store.objects import damage, gitextra, notices
from rewindfs.store.objects.layout import Layout, is_remote_key, layout_of

LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_FETCHED = 1000  # labels of one project fetched from a remote that are used


def is_label(name: str) -> bool:
    """Whether `name` is a label: the one rule, for what a person gives (validate_label)
    and for every label ref a reader finds (one that breaks it is skipped, said once).
    Stricter than git's ref-name rules, so every label is a name git accepts too; and
    never a word a reference already means (a number, `latest`)."""
    return bool(LABEL_RE.match(name or "")) and not name.isdigit() and name != "latest" \
        and ".." not in name and not name.endswith((".lock", "."))


def validate_label(label: str) -> str:
    if not is_label(label):
        raise InvalidInput(
            f"invalid label {label!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "not only digits, not 'latest', not ending in '.' or '.lock'"
        )
    return label


def refuse_taken(store, h16: str, label: str) -> None:
    """InvalidInput when `label` already names a checkpoint of the project (checked before
    a checkpoint is taken, so a refused label leaves nothing behind)."""
    validate_label(label)
    if not store.exists():
        return
    existing = store.repo.references.get(Layout.label_ref(h16, label))
    if existing is not None:
        raise InvalidInput(f"label {label!r} already names checkpoint {str(existing.target)[:8]}; "
                           "labels are unique per project")


def set_label(store, h16: str, label: str, commit: str) -> None:
    """Name `commit`; a label already naming another checkpoint of the project is an error."""
    validate_label(label)
    repo: pygit2.Repository = store.repo
    name = Layout.label_ref(h16, label)
    existing = repo.references.get(name)
    if existing is not None:
        if str(existing.target) == commit:
            return
        raise InvalidInput(f"label {label!r} already names checkpoint {str(existing.target)[:8]}")
    try:
        repo.references.create(name, pygit2.Oid(hex=commit), force=False)
    except pygit2.AlreadyExistsError:
        raise InvalidInput(f"label {label!r} was just taken by another checkpoint") from None
    except pygit2.GitError as exc:
        raise StoreError(f"could not record label {label!r}: {exc}") from exc


def move_label(store, h16: str, label: str, commit: str) -> str | None:
    """Point `label` at `commit`, wherever it pointed before; returns the previous target."""
    validate_label(label)
    repo: pygit2.Repository = store.repo
    name = Layout.label_ref(h16, label)
    existing = repo.references.get(name)
    try:
        repo.references.create(name, pygit2.Oid(hex=commit), force=True)
    except pygit2.GitError as exc:
        raise StoreError(f"could not record label {label!r}: {exc}") from exc
    return str(existing.target) if existing is not None else None


def remove_label(store, h16: str, label: str) -> str:
    """Delete `label`; returns the checkpoint it named. The checkpoint itself stays (until
    it is pruned like any unlabelled one)."""
    repo: pygit2.Repository = store.repo
    ref = repo.references.get(Layout.label_ref(h16, label)) if LABEL_RE.match(label) else None
    if ref is None:
        raise NotFound(f"no label {label!r} in this project")
    target = str(ref.target)
    try:
        ref.delete()
    except pygit2.GitError as exc:
        raise StoreError(f"could not remove label {label!r}: {exc}") from exc
    return target


def labels_by_commit(repo: pygit2.Repository, h16: str) -> dict[str, list[str]]:
    prefix = Layout.label_ref(h16, "")
    out: dict[str, list[str]] = {}
    listed = [name for name in gitextra.reference_names(repo, prefix + "*")
              if name.startswith(prefix)]
    usable = [name for name in listed if is_label(name[len(prefix):])]
    if is_remote_key(h16):
        if len(usable) < len(listed) or len(usable) > MAX_FETCHED:
            # A remote's labels are its pusher's: names a label here could not have (a `/`
            # in one) and those past MAX_FETCHED are left out, not listed or mounted.
            notices.notice(f"{len(listed) - min(len(usable), MAX_FETCHED)} of the "
                           f"{len(listed)} labels of {h16} are left out (names a label cannot "
                           f"have, or more than {MAX_FETCHED})")
        usable = sorted(usable)[:MAX_FETCHED]
    else:
        for name in listed:
            if not is_label(name[len(prefix):]):
                named_wrongly(repo, name)  # a sync tool's "conflicted copy", a hand-made ref
    for name in usable:
        try:
            target = str(repo.references[name].peel(pygit2.Commit).id)
        except (pygit2.GitError, KeyError, ValueError):
            left_out(repo, name)
            continue
        out.setdefault(target, []).append(name[len(prefix) :])
    # libgit2 leaves a ref file it cannot parse out of its list without a word.
    folder = layout_of(repo.path).store / prefix
    known = set(listed)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    for name in names:
        if prefix + name not in known and not name.endswith(".lock") \
                and os.path.isfile(folder / name):
            (left_out if is_label(name) else named_wrongly)(repo, prefix + name)
    return out


def named_wrongly(repo: pygit2.Repository, name: str) -> None:
    """Say (store.objects.notices) that label ref `name` has a name no label can have and
    is left out by every reader (a digit-only one would shadow a number)."""
    label = name.rsplit("/", 1)[-1]
    notices.notice(f"label ref {label!r} has a name no label can have and is left out: "
                   f"{layout_of(repo.path).store / name}; rename or remove it")


def left_out(repo: pygit2.Repository, name: str) -> None:
    """Say (store.objects.notices) that the damaged label ref `name` is left out of what
    is listed: the checkpoint it named may look unlabelled, or gone."""
    found = damage.ref_problem(layout_of(repo.path), name)
    where = f"{found.path} ({found.problem})" if found is not None else f"{name} (not a commit)"
    notices.notice(f"label {name.rsplit('/', 1)[-1]!r} is unreadable and left out: {where}; "
                   "run `rewind check`")
