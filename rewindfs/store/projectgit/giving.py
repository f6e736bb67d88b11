"""What a restore writes into a project's `.git` to give a recorded state back, in git's own
formats: a pack of the objects the repository lacks, `packed-refs`, HEAD, the index, the
stash's reflog, and for a repository recreated whole its config, small files and hooks.

Only the bytes are made here; where they go is the restore's (restore.gitrestore), which
writes through descriptors of the project and never follows a link a crafted `.git`
planted. The pack is built by git's pack-objects on the store (its configuration only):
it reuses the store's deltas, so a long history costs what copying it costs (libgit2's
pack builder would recompute every delta). An annotated tag, kept as its raw bytes, is
written back into the store first (the same bytes: the same id) so the pack holds it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from rewindfs.errors import StoreError
from rewindfs.store.objects import gitcli
from rewindfs.store.objects.layout import Layout
from rewindfs.store.projectgit import reading, statetree
from rewindfs.store.projectgit.bounds import DEFAULT, Bounds, Refusal

DEFAULT_CONFIG = (b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n"
                  b"\tbare = false\n\tlogallrefupdates = true\n")
# Directories a repository has, recreated or not (git makes them at init).
SKELETON = (b"objects", b"objects/pack", b"objects/info", b"refs", b"refs/heads",
            b"refs/tags", b"info", b"hooks", b"logs", b"logs/refs")


@dataclass
class Giving:
    state: statetree.State
    folder: Path  # private, in the store; removed by `done`
    pack: Path | None = None  # and its .idx beside it: what the repository lacks
    packed_refs: bytes = b""
    symbolic: dict[bytes, bytes] = field(default_factory=dict)  # loose: refs/... -> bytes
    head: bytes = b""
    files: dict[bytes, tuple[bytes, bool]] = field(default_factory=dict)  # recreated only

    def done(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def prepare(repo: pygit2.Repository, layout: Layout, state_id: str, gitdir: Path,
            recreate: bool, bounds: Bounds = DEFAULT) -> Giving:
    """The bytes that give state `state_id` back to the repository at `gitdir` (`recreate`:
    there is none; else only what it lacks is packed)."""
    state = statetree.load(repo, state_id, bounds)
    for oid, raw in state.tags.items():
        written = str(repo.odb.write(reading.TAG, raw))
        if written != oid:
            raise StoreError(f"repository state {state_id[:8]}: tag {oid[:8]} is damaged")
    folder = Path(tempfile.mkdtemp(prefix="giving-", dir=layout.store / "locks"))
    giving = Giving(state, folder)
    try:
        giving.pack = _pack(repo, layout, state, folder,
                            set() if recreate else _present(repo, gitdir))
        direct = sorted((n, v) for n, v in state.refs.items() if not v.startswith("ref:"))
        giving.packed_refs = "".join(f"{v} {n}\n" for n, v in direct).encode()
        giving.symbolic = {n.encode(): f"ref: {v[4:]}\n".encode()
                           for n, v in state.refs.items() if v.startswith("ref:")}
        giving.head = (f"ref: {state.head[4:]}\n" if state.head.startswith("ref:")
                       else f"{state.head}\n").encode()
        if recreate:
            giving.files = {n.encode(): (d, False) for n, d in state.files.items()}
            giving.files.setdefault(b"config", (DEFAULT_CONFIG, False))
            giving.files.update({b"hooks/" + n.encode(): (d, x)
                                 for n, (d, x) in state.hooks.items()})
    except BaseException:
        giving.done()
        raise
    return giving


def _present(repo: pygit2.Repository, gitdir: Path) -> set[str]:
    """Commits the repository's refs name that it has and the store has too: their
    history is not packed again (a repository that cannot be read gets everything)."""
    try:
        commits = reading.current_refs(gitdir, check=True).commits
    except Refusal:
        return set()
    return {c for c in commits if repo.odb.exists(pygit2.Oid(hex=c))}


def _pack(repo: pygit2.Repository, layout: Layout, state: statetree.State, folder: Path,
          present: set[str]) -> Path | None:
    wanted = sorted(state.tips())
    if not wanted:
        return None
    lines = [*wanted, *(f"^{c}" for c in sorted(present))]
    out = gitcli.run(layout, ["pack-objects", "--revs", "-q", str(folder / "pack")],
                     stdin="".join(f"{line}\n" for line in lines).encode())
    name = out.decode().strip()
    pack = folder / f"pack-{name}.pack"
    if not (pack.is_file() and pack.with_suffix(".idx").is_file()):
        raise StoreError("git pack-objects made no pack")
    if os.path.getsize(pack) <= 32:  # a header and a checksum: nothing the repository lacks
        return None
    return pack
