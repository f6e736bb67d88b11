"""`rewind checkpoint` (a plain one: no agent step) decided from the project's stat stamp,
without pygit2: nothing changed (the project's record touched, as a checkpoint touches
it), or a few named paths changed (for the resident helper to capture, hooks.helper), or
not known (the click command takes it). Used by cli.quickverbs in the `rewind` process
and, when a helper is up, by the helper itself, which has everything loaded already."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from rewindfs import config
from rewindfs.agent.workdir import working_dir_for_path
from rewindfs.hooks.fast import settings_key
from rewindfs.store.history import SnapshotResult, projects, stamp
from rewindfs.store.objects import Layout, normalize_workdir, project_hash, refuse_inside_mount


class Found:
    """What the stamp says of the project around a directory."""

    def __init__(self, layout: Layout, workdir: Path, h16: str,
                 changed: tuple[str, str, list[bytes]]):
        self.layout, self.workdir, self.h16 = layout, workdir, h16
        self.changed = changed  # (newest commit, its tree, the paths changed since)

    def unchanged(self, reason: str) -> dict[str, Any]:
        """Nothing to write: the project's record touched; the result's fields."""
        projects.touch(self.layout, self.h16, self.workdir)
        return asdict(SnapshotResult(taken=False, commit=self.changed[0], project=self.h16,
                                     workdir=str(self.workdir), reason=reason, tree=None,
                                     skipped_files={}))


def look(cwd: str) -> Found | None:
    """What changed in the project around `cwd` since its newest checkpoint, when the stamp
    says and nothing is to be reported (settings' warnings, paths the last capture left
    out: the click command's to print; the automatic import of other agents' snapshots:
    its to start); else None. Refused inside a mount."""
    settings = config.load(None, {})
    if settings.warnings or settings.auto_import:  # the click command's to say or start
        return None
    refuse_inside_mount(cwd)
    layout = Layout(settings.base)
    workdir = working_dir_for_path(layout, normalize_workdir(cwd))
    h16 = project_hash(workdir)
    found = stamp.since(layout.store, h16, workdir, settings_key(workdir))
    if found is None or [why for why in found[3] if why != "private_keys"]:
        return None
    return Found(layout, workdir, h16, found[:3])
