"""Objects found damaged, which a checkpoint writes again when the working tree still
holds their content.

`rewind check` (or anything else that finds a damaged object) lists its id with
`note()`; the next checkpoint re-reads the files whose index entries hold a listed
id, writes those objects into a fresh pack (git and libgit2 look in packs before loose
objects), deletes the damaged loose copy, and strikes the ids off the list. Ids no file
holds stay listed, for `rewind check` to report.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from rewindfs.store.objects.layout import Layout
from rewindfs.store.objects.locks import write_atomic


def note(layout: Layout, oids: Iterable[str]) -> None:
    """Add object ids (hex) to the list."""
    listed = {oid.hex() for oid in listed_ids(layout)}
    write_atomic(layout.damaged_objects,
                 "".join(sorted(f"{oid}\n" for oid in listed | set(oids))))


def listed_ids(layout: Layout) -> set[bytes]:
    """The listed ids (raw); empty without a list."""
    try:
        text = layout.damaged_objects.read_text(errors="replace")
    except FileNotFoundError:
        return set()
    out = set()
    for word in text.split():
        try:
            raw = bytes.fromhex(word)
        except ValueError:
            continue
        if len(raw) == 20:
            out.add(raw)
    return out


def drop_loose_copies(layout: Layout, oids: Iterable[bytes]) -> None:
    """Objects now whole in a fresh pack: delete their damaged loose copy (libgit2
    reads a loose copy it finds and fails rather than look further; git fsck
    complains about it)."""
    from rewindfs.store.objects.verify import loose  # (only with damage to heal)

    objects = layout.store / "objects"
    for oid in oids:
        try:
            os.unlink(loose.path_of(objects, oid.hex()))
        except FileNotFoundError:
            pass


def forget(layout: Layout, listed: set[bytes], written: set[bytes]) -> None:
    """Strike the ids written whole again off the list."""
    left = listed - written
    if left:
        write_atomic(layout.damaged_objects, "".join(sorted(o.hex() + "\n" for o in left)))
    else:
        layout.damaged_objects.unlink(missing_ok=True)
