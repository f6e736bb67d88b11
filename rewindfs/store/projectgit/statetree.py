"""A project repository's state as a commit of the store, and read back from one.

    <state commit>          parents: every commit the refs, HEAD and the stash name
      state/                what the repository was (two equal states have one tree)
        HEAD                `ref:<target>` or a commit id
        refs                one line per ref: `<id> <name>` or `ref:<target> <name>`
        index               the index file, as it was (absent: there was none)
        stash-log           logs/refs/stash (what `git stash list` shows)
        files/              config, description, info/exclude, info/attributes
        hooks/              the hooks, executable or not
      kept/                 what the parents do not keep alive
        <id>.tag            an annotated tag object, its raw bytes (a tag cannot be a
                            parent or a tree entry; the restore writes it back, same id)
        <id>                a tree or blob a ref or the index names (staged, never
                            committed), under its own type

Reading back validates everything (names as git validates them, ids, counts), since a
state's text came from a project's `.git`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pygit2

from rewindfs.errors import StoreError
from rewindfs.store.history.signature import signature
from rewindfs.store.projectgit.bounds import DEFAULT, Bounds
from rewindfs.store.projectgit.reading import BLOB, TREE, Found

FILE, EXEC, DIR = pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE, \
    pygit2.enums.FileMode.TREE
_HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass
class State:
    id: str
    refs: dict[str, str]  # name -> hex id, or "ref:<target>"
    head: str
    index: bytes | None = None
    stash_log: bytes | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    hooks: dict[str, tuple[bytes, bool]] = field(default_factory=dict)
    tags: dict[str, bytes] = field(default_factory=dict)  # raw annotated tags
    kept: list[str] = field(default_factory=list)  # trees and blobs kept
    commits: list[str] = field(default_factory=list)  # the state commit's parents

    def branches(self) -> dict[str, str]:
        return {n[len("refs/heads/"):]: v for n, v in self.refs.items()
                if n.startswith("refs/heads/") and not v.startswith("ref:")}

    def tips(self) -> set[str]:
        """Every object the state names directly (what a restore must bring)."""
        return set(self.commits) | set(self.tags) | set(self.kept)


def description(repo: pygit2.Repository, found: Found) -> pygit2.Oid:
    """The `state/` tree of what `found` holds (its objects need not be in the store)."""
    root = repo.TreeBuilder()
    _blob(repo, root, "HEAD", found.head.encode() + b"\n")
    lines = "".join(f"{value} {name}\n" for name, value in sorted(found.refs.items()))
    _blob(repo, root, "refs", lines.encode())
    if found.index is not None:
        _blob(repo, root, "index", found.index)
    if found.stash_log is not None:
        _blob(repo, root, "stash-log", found.stash_log)
    files = repo.TreeBuilder()
    info = repo.TreeBuilder()
    for name, data in sorted(found.files.items()):
        folder, _, leaf = name.rpartition("/")
        _blob(repo, info if folder == "info" else files, leaf, data)
    if len(info):
        files.insert("info", info.write(), DIR)
    root.insert("files", files.write(), DIR)
    hooks = repo.TreeBuilder()
    for name, (data, executable) in sorted(found.hooks.items()):
        _blob(repo, hooks, name, data, EXEC if executable else FILE)
    root.insert("hooks", hooks.write(), DIR)
    return root.write()


def commit(repo: pygit2.Repository, described: pygit2.Oid, found: Found) -> str:
    """The state commit (every object `found` names must be in the store by now)."""
    kept = repo.TreeBuilder()
    for oid, raw in sorted(found.tags.items()):
        _blob(repo, kept, f"{oid}.tag", raw)
    for oid, kind in sorted(found.kept.items()):
        kept.insert(oid, pygit2.Oid(hex=oid), DIR if kind == TREE else FILE)
    top = repo.TreeBuilder()
    top.insert("state", described, DIR)
    top.insert("kept", kept.write(), DIR)
    sig = signature()
    parents = [pygit2.Oid(hex=c) for c in sorted(found.commits)]
    oid = repo.create_commit(None, sig, sig, f"repository state ({len(found.refs)} refs)\n",
                             top.write(), parents)
    return str(oid)


def described_by(repo: pygit2.Repository, state: str) -> str | None:
    """The `state/` tree id of a state commit (None when it cannot be read)."""
    try:
        return str(repo[state].peel(pygit2.Tree)["state"].id)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def load(repo: pygit2.Repository, state: str, bounds: Bounds = DEFAULT) -> State:
    """A state commit read back and validated (StoreError when it cannot be)."""
    try:
        obj = repo[state].peel(pygit2.Commit)
        top = obj.tree
        desc, kept = top["state"], top["kept"]
        out = State(state, _refs(_read(repo, desc, "refs"), bounds),
                    _head(_read(repo, desc, "HEAD")),
                    commits=[str(p) for p in obj.parent_ids])
        out.index = _read(repo, desc, "index", missing=True)
        out.stash_log = _read(repo, desc, "stash-log", missing=True)
        for entry in repo[desc["files"].id]:
            if entry.type == BLOB:
                out.files[entry.name] = repo[entry.id].data
            elif entry.name == "info":
                for sub in repo[entry.id]:
                    if sub.type == BLOB:
                        out.files[f"info/{sub.name}"] = repo[sub.id].data
        for entry in repo[desc["hooks"].id]:
            if entry.type == BLOB and _plain_name(entry.name):
                out.hooks[entry.name] = (repo[entry.id].data, entry.filemode == EXEC)
        for entry in repo[kept.id]:
            name = entry.name
            if name.endswith(".tag") and _HEX40.fullmatch(name[:-4]):
                out.tags[name[:-4]] = repo[entry.id].data
            elif _HEX40.fullmatch(name):
                out.kept.append(name)
    except (KeyError, ValueError, pygit2.GitError, UnicodeError) as exc:
        raise StoreError(f"repository state {state[:8]} cannot be read: {exc}") from None
    return out


def _refs(data: bytes | None, bounds: Bounds) -> dict[str, str]:
    refs: dict[str, str] = {}
    for line in (data or b"").decode("utf-8", "surrogateescape").splitlines():
        value, _, name = line.partition(" ")
        if len(refs) >= bounds.max_refs:
            raise ValueError("too many refs")
        if not (name.startswith("refs/") and pygit2.reference_is_valid_name(name)):
            raise ValueError(f"not a ref name: {name[:80]!r}")
        if not (_HEX40.fullmatch(value) or value.startswith("ref:")
                and pygit2.reference_is_valid_name(value[4:])):
            raise ValueError(f"not a ref value: {value[:80]!r}")
        refs[name] = value
    return refs


def _head(data: bytes | None) -> str:
    text = (data or b"").decode("utf-8", "surrogateescape").strip()
    if _HEX40.fullmatch(text) or text.startswith("ref:refs/") \
            and pygit2.reference_is_valid_name(text[4:]):
        return text
    raise ValueError(f"not a HEAD: {text[:80]!r}")


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


def _read(repo: pygit2.Repository, tree: pygit2.Object, name: str, *, missing: bool = False
          ) -> bytes | None:
    try:
        entry = repo[tree.id][name]
    except KeyError:
        if missing:
            return None
        raise
    return repo[entry.id].data


def _blob(repo: pygit2.Repository, builder: pygit2.TreeBuilder, name: str, data: bytes,
          mode: int = FILE) -> None:
    builder.insert(name, repo.create_blob(data), mode)
