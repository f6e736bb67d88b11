"""What the captures of a project leave out of it, remembered between captures: files over
the size cap and tracked files the person's rules exclude (store.capture.tracked).

A capture of a few paths (what the hooks' stamp names as changed, a restore's) looks at
those alone; what it leaves out elsewhere is what the last captures found there, so every
checkpoint can say what the whole project holds that it does not
(store.history.leftout). Kept in `left-out.json` in the project's admin dir (a cache:
a full capture finds it all again); each remembered file is checked to still be there.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from rewindfs.store.objects.private import write_atomic

STATE_FILE = "left-out.json"
MAX_REMEMBERED = 10_000   # files remembered (beyond them a full capture finds them again)
OVERSIZE, EXCLUDED = "oversize", "excluded"


def update(admin: Path, root: bytes, paths: list[bytes] | None, oversize: list[bytes],
           excluded: list[bytes]) -> dict[str, dict[str, int]]:
    """{kind: {path: size}} the project's captures leave out, after a capture of `paths`
    (None: everything) that found `oversize` and `excluded` there; remembered."""
    old = load(admin)
    fresh = {OVERSIZE: oversize, EXCLUDED: excluded}
    out: dict[str, dict[str, int]] = {}
    for kind in (OVERSIZE, EXCLUDED):
        names = [os.fsencode(p) for p in old.get(kind, {})
                 if paths is not None and not _under(os.fsencode(p), paths)]
        sizes = {}
        for rel in sorted(set(names) | set(fresh[kind])):
            try:
                st = os.lstat(root + b"/" + rel)
            except OSError:
                continue   # gone: nothing left out any more
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                sizes[os.fsdecode(rel)] = st.st_size
            if len(sizes) >= MAX_REMEMBERED:
                break
        if sizes:
            out[kind] = sizes
    if out != old:
        try:
            write_atomic(admin / STATE_FILE, json.dumps(out), durable=False)
        except OSError:
            pass   # a scoped capture may then know less; a full one finds it again
    return out


def load(admin: Path) -> dict[str, dict[str, int]]:
    """What `update` last remembered ({} when nothing, or unreadable)."""
    try:
        data = json.loads((admin / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {kind: {p: s for p, s in found.items() if isinstance(s, int)}
            for kind, found in data.items()
            if kind in (OVERSIZE, EXCLUDED) and isinstance(found, dict)}


def _under(rel: bytes, paths: list[bytes]) -> bool:
    return any(not p or rel == p or rel.startswith(p + b"/") for p in paths)
