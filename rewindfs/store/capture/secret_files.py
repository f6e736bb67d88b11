"""Private keys the secret defaults keep out of checkpoints: found so that a checkpoint can
say, once per project, that they are not in it (and how to bring them in).

A file *looks like a private key* when it is left out of checkpoints (ignored) and

* its name is an SSH key's (`id_rsa`, `id_dsa`, `id_ecdsa`, `id_ed25519`) or a key
  bundle's (`*.p12`, `*.pfx`), or
* its name starts like an SSH key's (`id_rsa_deploy`; not `*.pub`) or ends in `.pem`
  or `.key`, or it sits in `.ssh/` or `.gnupg/`, and its first 8 KiB hold a private
  key header (`-----BEGIN ... PRIVATE KEY-----`: PEM, OpenSSH; PGP's `PRIVATE KEY
  BLOCK`): a certificate alone is not a key.

Walking a big tree on every checkpoint would cost as much as the checkpoint itself,
so the walk remembers each directory's mtime (a file created, deleted or renamed in
a directory changes it) and lists only directories that changed since; ignored
directories (node_modules, ...) are not entered, nor other filesystems. After the
warning was given, the project is never walked for this again.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass

from rewindfs.lazylog import logger
from rewindfs.store.objects.repo import Project

SSH_KEYS = (b"id_rsa", b"id_dsa", b"id_ecdsa", b"id_ed25519")
BUNDLES = (b".p12", b".pfx")
PEM_NAMES = (b".pem", b".key")
KEY_DIRS = (b".ssh", b".gnupg")
HEADER = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
HEAD_BYTES = 8192
SCAN_FILE, WARNED_FILE = "secret-scan.json", "secrets-warned"
SHOWN = 10  # paths named in the warning
log = logger(__name__)


@dataclass
class _Walk:
    root: bytes
    dev: int
    project: Project

    def ignored(self, rel: bytes, directory: bool = False) -> bool:
        try:
            return self.project.repo.path_is_ignored(os.fsdecode(rel) + ("/" if directory
                                                                          else ""))
        except (UnicodeError, ValueError):
            return False


def report(project: Project) -> list[str]:
    """`left_out_keys` under the project's current ignore rules; never raises (a checkpoint
    must not fail over a warning). The caller holds the project lock."""
    try:
        return left_out_keys(project, _rules_stamp(project))
    except Exception:  # noqa: BLE001 - a warning is not worth a failed checkpoint
        log.debug("private-key check of %s failed", project.workdir, exc_info=True)
        return []


def left_out_keys(project: Project, stamp: str) -> list[str]:
    """Files that look like private keys and that checkpoints leave out, found since the
    last call, until they have been reported once (then always []). `stamp` names the
    ignore rules in force: when it changes, every directory is listed again."""
    admin = project.store.layout.worktree_admin(project.h16)
    if (admin / WARNED_FILE).exists():
        return []
    root = os.fsencode(str(project.workdir))
    try:
        walk = _Walk(root, os.lstat(root).st_dev, project)
    except OSError:
        return []
    cache = _load(admin / SCAN_FILE, stamp)
    seen: dict[str, tuple[int, list[str]]] = {}
    candidates: list[bytes] = []
    # Paths as str (surrogate-escaped), the form the cache holds: no conversions on the
    # path every checkpoint takes, one lstat per directory.
    top = os.fsdecode(root)
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            st = os.lstat(top + "/" + rel if rel else top)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_dev != walk.dev:
            continue
        known = cache.get(rel)
        if known is not None and known[0] == st.st_mtime_ns:
            seen[rel] = known
        else:
            listed = _list(walk, os.fsencode(rel), candidates)
            seen[rel] = known = (st.st_mtime_ns, [os.fsdecode(d) for d in listed])
        stack.extend(rel + "/" + d if rel else d for d in known[1])
    found = sorted(os.fsdecode(c) for c in candidates
                   if walk.ignored(c) and _looks_like_key(root + b"/" + c))
    if found:
        _save(admin / WARNED_FILE, "\n".join(found) + "\n")
    if seen != cache:
        _save(admin / SCAN_FILE, json.dumps({"stamp": stamp, "dirs": seen}), stamp, seen)
    return found


def _rules_stamp(project: Project) -> str:
    """What the ignore rules were made of: the exclude files and the root .gitignore."""
    layout = project.store.layout
    parts = []
    for path in (layout.worktree_admin(project.h16) / "exclude", layout.store / "info" /
                 "exclude", project.workdir / ".gitignore"):
        try:
            st = os.stat(path)
            parts.append(f"{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            parts.append("-")
    return " ".join(parts)


def warning(paths: list[str]) -> str:
    """The one line a checkpoint prints about them."""
    shown = ", ".join(paths[:SHOWN]) + (" ..." if len(paths) > SHOWN else "")
    return (f"left out {len(paths)} file(s) that look like private keys: {shown} (secret "
            "files are excluded by default; add `!PATTERN` to .rewindignore to checkpoint "
            "them; said once per project)")


def _list(walk: _Walk, rel: bytes, candidates: list[bytes]) -> list[bytes]:
    """Subdirectories worth entering; key-like names go to `candidates`."""
    subdirs = []
    try:
        with os.scandir(walk.root + b"/" + rel if rel else walk.root) as listing:
            entries = [(e.name, e.is_dir(follow_symlinks=False),
                        e.is_file(follow_symlinks=False)) for e in listing]
    except OSError:
        return []
    in_key_dir = rel.rpartition(b"/")[2] in KEY_DIRS
    for name, is_dir, is_file in entries:
        child = rel + b"/" + name if rel else name
        if is_dir:
            if name == b".git":
                continue
            if name in KEY_DIRS or not walk.ignored(child, directory=True):
                subdirs.append(name)
        elif is_file and (in_key_dir or _key_name(name)):
            candidates.append(child)
    return subdirs


def _key_name(name: bytes) -> bool:
    lower = name.lower()
    return (lower.startswith(SSH_KEYS) and not lower.endswith(b".pub")) \
        or lower.endswith(BUNDLES) or lower.endswith(PEM_NAMES)


def _looks_like_key(path: bytes) -> bool:
    name = os.path.basename(path).lower()
    if name in SSH_KEYS or name.endswith(BUNDLES):
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return HEADER.search(os.read(fd, HEAD_BYTES)) is not None
    except OSError:
        return False
    finally:
        os.close(fd)


# The last cache read or written, per cache file: an agent process checkpointing the same
# project again need not parse it again ({path: (file mtime_ns, stamp, dirs)}).
_MEMO: dict[str, tuple[int, str, dict[str, tuple[int, list[str]]]]] = {}


def _load(path, stamp: str) -> dict[str, tuple[int, list[str]]]:
    try:
        mtime = os.stat(path).st_mtime_ns
        memo = _MEMO.get(str(path))
        if memo is not None and memo[0] == mtime:
            return dict(memo[2]) if memo[1] == stamp else {}
        doc = json.loads(path.read_text(encoding="utf-8"))
        dirs = {k: (int(v[0]), [str(d) for d in v[1]]) for k, v in doc["dirs"].items()}
        _MEMO[str(path)] = (mtime, str(doc.get("stamp")), dirs)
        return dirs if doc.get("stamp") == stamp else {}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return {}


def _save(path, text: str, stamp: str | None = None,
          dirs: dict[str, tuple[int, list[str]]] | None = None) -> None:
    from rewindfs.store.objects.private import write_atomic

    try:
        write_atomic(path, text, errors="surrogateescape")
        if dirs is not None:
            _MEMO[str(path)] = (os.stat(path).st_mtime_ns, stamp or "", dict(dirs))
    except OSError:
        pass  # a cache: the next checkpoint walks again
