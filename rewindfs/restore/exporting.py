"""A checkpoint (or part of it) written into a new directory: `rewind restore N --to DIR`."""

from __future__ import annotations

import os
from pathlib import Path

from rewindfs import store as st
from rewindfs.errors import NotFound, Refused
from rewindfs.restore.apply import apply
from rewindfs.restore.paths import project_relative
from rewindfs.restore.plan import CREATE, Action, Plan
from rewindfs.restore.restoring import RestoreResult, check_tree, history_of
from rewindfs.store.history import modes, trees


def export(store: st.Store, workdir, reference: str | st.Checkpoint, dest,
           paths: list[str] | None = None, *, dry_run: bool = False,
           source: str | None = None) -> RestoreResult:
    """Write a checkpoint (or part of it) into a new directory `dest` (`dry_run`: only the
    plan; nothing is created). `source`: the key of a fetched project whose checkpoint
    it is (store.remote), instead of the project at `workdir`."""
    wd = st.normalize_workdir(workdir)
    repo, h16 = history_of(store, wd)
    h16 = source or h16
    target = reference if isinstance(reference, st.Checkpoint) else st.resolve(repo, h16, reference)
    out = Path(dest).expanduser().absolute()
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise Refused(f"{out} exists and is not an empty directory")
    check_tree(repo, target, source)
    scope = [project_relative(p, wd) for p in paths] if paths else [b""]
    actions = []
    for prefix in scope:
        entries = list(trees.walk_entries(repo, target.tree_id, prefix))
        if not entries:
            raise NotFound(f"{os.fsdecode(prefix)!r} is not in checkpoint {target.short}")
        actions += [Action(CREATE, e.path, e) for e in entries]
    plan = Plan(actions=actions)
    if dry_run:
        return RestoreResult(out, target, plan)
    _make_export_dir(out)
    outcome = apply(plan, os.fsencode(str(out)), lambda oid: trees.blob_source(repo, oid),
                    modes=modes.read(repo, h16, target.id))
    return RestoreResult(out, target, plan, None, outcome)


def _make_export_dir(out: Path) -> None:
    """The export directory (and missing parents): 0755 less the umask at most."""
    missing = []
    probe = out
    while not os.path.lexists(probe):
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        os.mkdir(directory, 0o755)
