"""What a checkpoint left out of its project, recorded in the checkpoint and said where a
person looks (`rewind show`, `rewind restore`, the hooks' answer to the agent).

The record is a trailer of the commit message, `Rewind-Left-Out` (Hermes shows only the
subject; the file tree is untouched): JSON with no whitespace (spaces escaped as \\u0020,
every other control or non-ASCII character escaped by JSON itself), of the form
``{"n": how many in all, "f": [[kind, path, size or null], ...]}``, at most MOST paths named.
A checkpoint whose tree is its parent's is still taken when what it leaves out of the
project differs (a 12 MB file appeared): the newest checkpoint always says it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

LEFT_OUT_TRAILER = "Rewind-Left-Out"
MOST = 50   # paths a checkpoint names (the count says how many in all)
# Why each kind is not in the checkpoint (store.capture.Capture.skipped's kinds)
WHY = {
    "oversize": "over the size cap, max_file_size_mb",
    "excluded": "tracked by git, left out by .rewindignore, extra_excludes or the secret "
                "defaults",
    "unreadable": "unreadable",
    "too_deep": "nested too deep to capture",
    "changing": "kept changing while read: its previous version kept",
    "git_index": "git's index could not be read, so files git tracks that the excludes "
                 "match may be missing",
    "ignored": "ignored by the excludes (node_modules, build output, .env, ...)",
}
KINDS = tuple(WHY)
# Kinds that say what the project holds and checkpoints do not (the others say how one
# capture went): a change in them alone is a new checkpoint.
LASTING = ("oversize", "excluded")


@dataclass(frozen=True)
class LeftOut:
    kind: str
    path: str
    size: int | None = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "path": self.path, "size": self.size, "why": WHY[self.kind]}


def entries(skipped: dict[str, list[str]], sizes: dict[str, int] | None = None
            ) -> list[LeftOut]:
    """The left-out paths of a capture (Capture.skipped, SnapshotResult.skipped_files),
    kind by kind; private keys (warned about once, store.capture.secret_files) are not
    among them."""
    sizes = sizes or {}
    return [LeftOut(kind, path, sizes.get(path)) for kind in KINDS
            for path in skipped.get(kind, ())]


def encode(found: list[LeftOut]) -> str | None:
    """The trailer's value (None: nothing left out)."""
    if not found:
        return None
    data = {"n": len(found), "f": [[e.kind, e.path, e.size] for e in found[:MOST]]}
    return json.dumps(data, separators=(",", ":")).replace(" ", "\\u0020")


def decode(trailers: dict[str, str]) -> tuple[list[LeftOut], int]:
    """(the paths named, how many in all) of a checkpoint's record; ([], 0) when it has
    none, or one this reader cannot read (a checkpoint from elsewhere: untrusted)."""
    text = trailers.get(LEFT_OUT_TRAILER)
    if not text or len(text) > 64 * 1024:
        return [], 0
    try:
        data = json.loads(text)
        found = [LeftOut(kind, path, size if isinstance(size, int) else None)
                 for kind, path, size in data["f"][:MOST]
                 if kind in WHY and isinstance(path, str)]
        total = data["n"]
    except (ValueError, KeyError, TypeError):
        return [], 0
    return found, max(total, len(found)) if isinstance(total, int) else len(found)


def lasting(value: str | None) -> set[tuple[str, str]]:
    """What a record says the project holds and checkpoints do not, to compare two."""
    found, _total = decode({LEFT_OUT_TRAILER: value or ""})
    return {(e.kind, e.path) for e in found if e.kind in LASTING}


def phrase(entry: LeftOut, size_text: Callable[[int], str] | None = None) -> str:
    """`data/train.csv (11.4 MiB, over the size cap, max_file_size_mb)`: the path as git
    quotes it (nothing a terminal would act on), its size as `size_text` writes it (the
    CLI's human_bytes; None: no size), why."""
    from rewindfs.store.history.files.quoting import quote_path

    size = f"{size_text(entry.size)}, " if size_text is not None and entry.size is not None \
        and entry.kind in LASTING else ""
    return f"{quote_path(entry.path)} ({size}{WHY[entry.kind]})"


def summary(found: list[LeftOut], total: int, most: int = 10,
            size_text: Callable[[int], str] | None = None) -> str:
    """The paths named in one line: the first `most`, then how many more."""
    shown = ", ".join(phrase(e, size_text) for e in found[:most])
    more = total - min(len(found), most)
    return shown + (f" and {more} more" if more > 0 else "")


def remembered(layout, h16: str) -> list[LeftOut]:
    """What the project's captures leave out of it now, as the last one found it
    (objects.omitted): for a caller that took no checkpoint (nothing changed since)."""
    from rewindfs.store.objects import omitted

    found = omitted.load(layout.worktree_admin(h16))
    return [LeftOut(kind, path, size) for kind in KINDS
            for path, size in sorted(found.get(kind, {}).items())]
