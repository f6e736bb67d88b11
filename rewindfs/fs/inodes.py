"""Inode numbers derived from what a node is, so they are the same in every mount.

No table is needed to keep them stable, and two names for the same content get
the same number: every file with the same blob and exec bit, in any checkpoint of
any project, is one inode, so `diff -r` between checkpoints sees identical files
as the same file (same device and inode) and skips reading them.
"""

from __future__ import annotations

import hashlib

ROOT_INODE = 1  # FUSE's fixed root
_FIRST_FREE = 1 << 10  # leave low numbers alone: tools treat some of them specially


def inode_for(*key: str | bytes | int | bool) -> int:
    """A 63-bit number for `key` (collisions are as likely as in a 63-bit hash: never)."""
    h = hashlib.blake2b(digest_size=8)
    for part in key:
        data = part if isinstance(part, bytes) else str(part).encode()
        h.update(len(data).to_bytes(4, "little"))
        h.update(data)
    number = int.from_bytes(h.digest(), "little") & ((1 << 63) - 1)
    return number if number >= _FIRST_FREE else number + _FIRST_FREE
