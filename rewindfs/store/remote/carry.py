"""Carried copies: how a checkpoint travels to a remote.

A checkpoint's commit names its parent, and pruning drops old parents here without
rewriting anything (history.shallow). A remote that is not shallow (GitHub, GitLab,
any bare repository with `receive.shallowUpdate` off, git's default) refuses a commit
whose parent it cannot have ("shallow update not allowed"), so the original commits
of a pruned project cannot be pushed at all. What goes instead is a carried copy of
each checkpoint: the same tree, author, committer and message, one trailer more
(`Rewind-Origin: <id of the checkpoint here>`), and as parent the carried copy of the
checkpoint pushed before it. The copies of one project form one history that only
ever grows on the remote: a checkpoint deleted or pruned here stays there until a
push is asked to `--prune`.

A copy is a pure function of the checkpoint and the copy below it, so making it
twice (a push that was killed, then run again) gives the same id. Trees and blobs
are shared with the original: a copy costs one small commit object.
"""

from __future__ import annotations

import re

import pygit2
from pygit2.enums import ObjectType

from rewindfs.store.history.trailers import parse_message

ORIGIN_TRAILER = "Rewind-Origin"
_TRAILER_LINE = re.compile(rb"^[A-Za-z][A-Za-z0-9-]*: ")


def carry(repo: pygit2.Repository, commit: pygit2.Commit, parent: str | None) -> str:
    """The carried copy of `commit`, its only parent `parent` (None: the first one)."""
    raw = repo.odb.read(commit.id)[1]
    header, _, message = raw.partition(b"\n\n")
    lines: list[bytes] = []
    in_signature = False
    for line in header.split(b"\n"):
        if in_signature and line.startswith(b" "):
            continue
        in_signature = line.startswith(b"gpgsig")  # a signature of other bytes: dropped
        if in_signature or line.startswith(b"parent "):
            continue
        lines.append(line)
    if parent:
        lines.insert(1, b"parent " + parent.encode())  # after `tree`, as git orders them
    data = b"\n".join(lines) + b"\n\n" + with_origin(message, str(commit.id))
    return str(repo.odb.write(ObjectType.COMMIT, data))


def with_origin(message: bytes, origin: str) -> bytes:
    """`message` with the origin trailer added to its trailer block (or a new block)."""
    body = message.rstrip(b"\n")
    trailer = f"{ORIGIN_TRAILER}: {origin}".encode()
    last = body.rsplit(b"\n\n", 1)[-1] if b"\n\n" in body else b""
    if last and all(_TRAILER_LINE.match(line) for line in last.split(b"\n")):
        return body + b"\n" + trailer + b"\n"
    return body + b"\n\n" + trailer + b"\n"


def origin(commit: pygit2.Commit) -> str | None:
    """The id (here, or on the machine that pushed it) of the checkpoint `commit` carries."""
    return parse_message(commit.message)[1].get(ORIGIN_TRAILER)


def likeness(commit: pygit2.Commit) -> tuple:
    """What makes two checkpoints the same one told twice: a checkpoint and its copy, or
    checkpoints `rewind delete` wrote again with new ids (same files, time and message)."""
    reason, trailers = parse_message(commit.message)
    trailers.pop(ORIGIN_TRAILER, None)
    return (str(commit.tree_id), commit.author.time, reason, tuple(sorted(trailers.items())))
