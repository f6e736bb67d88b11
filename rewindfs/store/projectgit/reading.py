"""A project's `.git` read through libgit2 (the one reader of git): what its state is, and
which objects of it the store must hold to give that state back.

Every ref is read (branches, tags, the stash, notes, remote-tracking, anything under
`refs/`), HEAD symbolic or detached, the stash's reflog (its older entries are what
`git stash list` shows), the index file, the config and other small files, and the hooks
with their executable bit. Names are validated as git validates them; a ref whose object
the repository lacks is left out and said. Files are read without following a symlink
(bounds.read_small), so nothing outside `.git` enters the store.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from rewindfs.store.objects.indexfile import not_in_tip
from rewindfs.store.projectgit.bounds import Bounds, Refusal, read_small

COMMIT = pygit2.enums.ObjectType.COMMIT
TREE = pygit2.enums.ObjectType.TREE
BLOB = pygit2.enums.ObjectType.BLOB
TAG = pygit2.enums.ObjectType.TAG
# Small files of `.git` a recreated repository gets back (the index, refs and hooks apart).
FILES = ("config", "description", "info/exclude", "info/attributes")
MAX_TAG_DEPTH = 16  # a tag of a tag of ...
_HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass
class Found:
    refs: dict[str, str] = field(default_factory=dict)  # name -> hex id, or "ref:<target>"
    head: str = ""  # "ref:<target>" or a hex id
    stash_log: bytes | None = None
    index: bytes | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    hooks: dict[str, tuple[bytes, bool]] = field(default_factory=dict)  # (bytes, executable)
    commits: set[str] = field(default_factory=set)  # every commit the refs and stash name
    tags: dict[str, bytes] = field(default_factory=dict)  # annotated tag id -> raw object
    kept: dict[str, int] = field(default_factory=dict)  # trees and blobs: id -> type
    left_out: list[str] = field(default_factory=list)

    @property
    def wants(self) -> set[str]:
        """What the store must hold: the commits, tags and the other objects named."""
        return self.commits | set(self.tags) | set(self.kept)


def open_repository(gitdir: Path) -> pygit2.Repository:
    try:
        return pygit2.Repository(str(gitdir), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError, ValueError, OSError) as exc:
        raise Refusal(f"the repository in {gitdir} cannot be read: {_line(exc)}") from None


def read(gitdir: Path, bounds: Bounds) -> Found:
    repo = open_repository(gitdir)
    found = Found()
    try:
        _refs(repo, found, bounds)
        _head(repo, found)
        _stash(repo, gitdir, found, bounds)
        _index(repo, gitdir, found, bounds)
    except (pygit2.GitError, OSError, ValueError) as exc:
        raise Refusal(f"the repository in {gitdir} cannot be read: {_line(exc)}") from None
    for name in FILES:
        data = read_small(gitdir / name, bounds.max_file)
        if data is not None:
            found.files[name] = data
    _hooks(gitdir / "hooks", found, bounds)
    return found


def current_refs(gitdir: Path, *, check: bool = False) -> Found:
    """The refs and HEAD of the repository at `gitdir` now, as `read` gives them
    (`check`: only refs whose objects it has, and the commits they name); Refusal when it
    cannot be read."""
    repo = open_repository(gitdir)
    found = Found()
    try:
        _refs(repo, found, Bounds(), check=check)
        _head(repo, found)
    except (pygit2.GitError, OSError, ValueError) as exc:
        raise Refusal(f"the repository in {gitdir} cannot be read: {_line(exc)}") from None
    return found


def _refs(repo: pygit2.Repository, found: Found, bounds: Bounds, check: bool = True) -> None:
    missing = []
    for name in repo.references:
        if len(found.refs) >= bounds.max_refs:
            raise Refusal(f"the repository has over {bounds.max_refs:,} refs: not recorded")
        if not name.startswith("refs/") or not pygit2.reference_is_valid_name(name):
            found.left_out.append(f"ref {name!r} (not a valid name) is not recorded")
            continue
        ref = repo.references.get(name)
        if ref is None:
            continue
        if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
            target = str(ref.target)
            if pygit2.reference_is_valid_name(target):
                found.refs[name] = "ref:" + target
            continue
        oid = str(ref.target)
        if check and not _take(repo, oid, found):
            missing.append(name)
            continue
        found.refs[name] = oid
    if missing:
        found.left_out.append(f"{len(missing)} ref(s) naming objects the repository lacks "
                              f"are not recorded ({', '.join(missing[:3])})")


def _take(repo: pygit2.Repository, oid: str, found: Found, depth: int = 0) -> bool:
    """Add what the store must hold for a ref to `oid`; False when the repository lacks it."""
    try:
        kind = repo.odb.read_header(pygit2.Oid(hex=oid))[0]
    except (KeyError, ValueError, pygit2.GitError):
        return False
    if kind == COMMIT:
        found.commits.add(oid)
    elif kind == TAG:
        if depth >= MAX_TAG_DEPTH:
            return False
        if oid not in found.tags:
            raw = repo.odb.read(pygit2.Oid(hex=oid))[1]
            if not _take(repo, str(repo[oid].target), found, depth + 1):
                return False
            found.tags[oid] = raw
    elif kind in (TREE, BLOB):
        found.kept[oid] = kind
    else:
        return False
    return True


def _head(repo: pygit2.Repository, found: Found) -> None:
    head = repo.references.get("HEAD")
    if head is None:
        raise Refusal("the repository has no HEAD")
    if head.type == pygit2.enums.ReferenceType.SYMBOLIC:
        target = str(head.target)
        if not pygit2.reference_is_valid_name(target):
            raise Refusal(f"the repository's HEAD names {target!r}, not a valid ref")
        found.head = "ref:" + target
    else:
        found.head = str(head.target)
        if not _take(repo, found.head, found):
            raise Refusal("the repository's HEAD names an object it lacks")


def _stash(repo: pygit2.Repository, gitdir: Path, found: Found, bounds: Bounds) -> None:
    """Every entry of the stash, not just its newest (refs/stash): its reflog holds them.
    The reflog is read here, not by libgit2, whose reflog reader creates the file when it
    is missing: a write into the project's `.git`, through whatever link is planted there.
    Each line is `<old id> <new id> <who> <when>\t<message>`; the new ids are the stashes."""
    if "refs/stash" not in found.refs:
        return
    raw = read_small(gitdir / "logs" / "refs" / "stash", bounds.max_file * 16)
    if raw is None:
        return
    found.stash_log = raw
    lines = raw.splitlines()
    if len(lines) > bounds.max_stashes:
        found.left_out.append(f"stash entries past the {bounds.max_stashes:,}th")
    for line in lines[-bounds.max_stashes:]:
        new = line[41:81].decode("ascii", "replace")
        if _HEX40.fullmatch(new):
            _take(repo, new, found)


def _index(repo: pygit2.Repository, gitdir: Path, found: Found, bounds: Bounds) -> None:
    """The index file, and what it names that HEAD's tree does not hold at the same path
    (staged and never committed): kept with the state."""
    data = read_small(gitdir / "index", bounds.max_index)
    if data is None:
        if os.path.lexists(gitdir / "index"):
            found.left_out.append(f"the index (over {bounds.max_index >> 20} MiB, or not a "
                                  "file) is not recorded")
        return
    head = found.head if not found.head.startswith("ref:") else \
        found.refs.get(found.head[4:])
    try:
        blobs, trees = not_in_tip(repo, data, head)
    except (ValueError, IndexError):
        found.left_out.append("the index (not one git can read) is not recorded")
        return
    found.index = data
    for kind, oids in ((BLOB, blobs), (TREE, trees)):
        for oid in oids:
            try:
                if repo.odb.read_header(pygit2.Oid(hex=oid))[0] == kind:
                    found.kept[oid] = kind
            except (KeyError, ValueError, pygit2.GitError):
                pass  # a submodule's commit, an intent-to-add entry: not this repository's


def _hooks(folder: Path, found: Found, bounds: Bounds) -> None:
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries)
    except OSError:
        return
    skipped = []
    for name in names:
        path = folder / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or len(found.hooks) >= bounds.max_hooks:
            skipped.append(name)
            continue
        data = read_small(path, bounds.max_file)
        if data is None:
            skipped.append(name)
            continue
        found.hooks[name] = (data, bool(st.st_mode & 0o111))
    if skipped:
        found.left_out.append(f"hook(s) not recorded (links, folders or over "
                              f"{bounds.max_file >> 20} MiB): {', '.join(skipped[:5])}")


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return "".join(c if c.isprintable() else "?" for c in text)[:200]
