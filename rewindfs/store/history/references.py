"""Resolving a checkpoint reference: `3`, `latest`, a label, a hash, `10 minutes ago`.

Times are parsed by timeref; `REF:PATH` names a file in a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from rewindfs.errors import InvalidInput, RewindError, StoreDamaged
from rewindfs.store.history.chain import Checkpoint, checkpoints
from rewindfs.store.history.checkpoint import checked, choose
from rewindfs.store.history.files import trees
from rewindfs.store.history.labels import is_label
from rewindfs.store.objects import damage
from rewindfs.store.objects.layout import Layout, layout_of


def resolve(repo: pygit2.Repository, h16: str, reference: str) -> Checkpoint:
    """The checkpoint of project `h16` that `reference` names.

    Accepted: `latest` (= 1), a number (1 = newest), a label, a full or short hash
    (>= 4 hex digits; also of a pre-rollback snapshot), or a time (see store.history.timeref):
    the newest numbered checkpoint taken at or before it (store.history.checkpoint.choose).
    """
    text = checked(reference)
    return choose(checkpoints(repo, h16), text, lambda prefix: _exists_elsewhere(repo, prefix),
                  lambda: _raise_if_damaged_label(repo, h16, text))


def holding(repo: pygit2.Repository, keys: list[str], commit: str) -> list[str]:
    """Which of the projects `keys` (local hashes or fetched keys) list checkpoint
    `commit` (an id, or an unambiguous prefix of one), as `rewind list` lists them."""
    try:
        found = str(repo.revparse_single(commit).peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError):
        return []
    return [key for key in keys if any(cp.id == found for cp in checkpoints(repo, key))]


def resolve_with_path(repo: pygit2.Repository, h16: str, text: str,
                      to_relative: Callable[[str], bytes]) -> tuple[Checkpoint, bytes]:
    """`REF:PATH` (as in `git show REV:PATH`): the checkpoint and the project-relative path.

    References may hold colons themselves (`@yesterday-14:00`), so each colon is tried
    from the left and the first split whose reference resolves and whose path exists
    in that checkpoint wins; when none does, the first resolvable split is reported.
    """
    first_error: RewindError | None = None
    fallback: tuple[Checkpoint, bytes] | None = None
    at = text.find(":")
    while at >= 0:
        ref, path_text = text[:at], text[at + 1:]
        try:
            cp = resolve(repo, h16, ref)
            rel = to_relative(path_text) if path_text else b""
        except RewindError as exc:
            first_error = first_error or exc
        else:
            if not rel or trees.lookup_tree(repo, cp.tree_id, rel) is not None:
                return cp, rel
            fallback = fallback or (cp, rel)
        at = text.find(":", at + 1)
    if fallback is not None:
        return fallback
    if first_error is not None:
        raise first_error
    raise InvalidInput(f"expected REF:PATH, got {text!r}")


def _raise_if_damaged_label(repo: pygit2.Repository, h16: str, text: str) -> None:
    """A label whose checkpoint cannot be read is damage, not an unknown name."""
    if not is_label(text):
        return  # no label has that name (a ref by it is skipped by every reader)
    try:
        ref = repo.references.get(Layout.label_ref(h16, text))
    except ValueError:
        return  # not a valid ref name, so not a label
    if ref is None:
        return
    target = str(ref.target)
    name = Layout.label_ref(h16, text)
    # The label's own file when its target is missing (it is the label that is wrong),
    # the target's when that is there but damaged.
    layout = layout_of(repo.path)
    raise damage.ref_problem(layout, name) or StoreDamaged(
        Path(repo.path) / name, f"names unreadable checkpoint {target[:8]}")


def _exists_elsewhere(repo: pygit2.Repository, prefix: str) -> bool:
    try:
        obj = repo.revparse_single(prefix) if len(prefix) < 40 else repo.get(prefix)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    return isinstance(obj, pygit2.Commit)
