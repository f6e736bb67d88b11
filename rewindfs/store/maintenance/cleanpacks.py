"""Which packs a repack may leave as they are: every object in them is still reached.

git's `repack -A` rewrites every pack to drop what nothing reaches, so each gc costs the
whole store. A pruning to the size cap frees the oldest checkpoints, whose objects sit
in a few packs (rewindfs writes a pack or two per checkpoint), so it names every other
pack to git as one to keep (`--keep-pack`): the repack rewrites only the packs that hold
something unreachable, and costs what they hold. What is reached is git's own answer,
from the roots its repack keeps (`rev-list --objects --all --reflog --indexed-objects`,
history stopping at `shallow`); what a pack holds is git's too (`show-index`). A pack
that appears after the answer (a checkpoint written meanwhile) is not named, so the
repack treats it as it would any pack; a pack whose index cannot be read is not named
either.
"""

from __future__ import annotations

from rewindfs.errors import StoreError
from rewindfs.store.objects import gitcli
from rewindfs.store.objects.layout import Layout, pack_files


def clean_packs(layout: Layout) -> list[str]:
    """Names (`pack-<id>.pack`) of the packs of which something reaches every object."""
    reached = set(gitcli.run(layout, ["rev-list", "--objects", "--all", "--reflog",
                                      "--indexed-objects", "--no-object-names"]).split())
    pack_dir = layout.store / "objects" / "pack"
    present = pack_files(layout.store / "objects")
    out = []
    for name in sorted(present):
        pack = name[:-len(".idx")] + ".pack"
        if not name.endswith(".idx") or pack not in present:
            continue
        try:
            listed = gitcli.run(layout, ["show-index"], stdin=(pack_dir / name).read_bytes())
        except (OSError, StoreError):
            continue  # gone meanwhile, or unreadable: git's repack decides about it
        held = [line.split()[1] for line in listed.splitlines() if line.strip()]
        if all(oid in reached for oid in held):
            out.append(pack)
    return out
