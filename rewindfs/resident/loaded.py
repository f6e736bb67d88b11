"""What a long-lived process has loaded, and whether any of it changed on disk since.

The hooks' resident helper keeps rewindfs, pygit2 and their dependencies loaded for
minutes; an upgrade (or an edit, or a replaced pygit2 `.so`) meanwhile must not leave it
answering with the old code, nor with a mix of old modules and new files read later.
`Snapshot` records every file it has loaded: each module's source or extension file (the
standard library's sources aside: they change only with Python, whose program and
libraries are watched) and every file mapped into the process (shared libraries:
libgit2, OpenSSL, cffi's backend), by device, inode, size and modification time;
`changed` names the first one that is no longer what was loaded (replaced, rewritten or
gone).
"""

from __future__ import annotations

import os
import sys

Stamp = tuple[int, int, int, int]  # device, inode, size, mtime in ns


def _stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _files() -> set[str]:
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.isabs(path):
            found.add(path)
    from rewindfs import portable

    try:
        if not portable.linux("proc"):   # the modules' own files only (pygit2's .so too)
            raise OSError("no /proc")
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith("/") and \
                        not fields[5].rstrip().endswith(" (deleted)"):
                    found.add(fields[5].rstrip("\n"))
    except OSError:
        pass   # not Linux: the modules' own files only
    # The standard library's sources change only with Python itself, whose program and
    # shared libraries are watched: half of the stats each request would cost, saved.
    stdlib = os.path.join(os.path.dirname(os.__file__), "")
    return {path for path in found if not path.startswith(("/dev/", "/proc/", "/memfd:"))
            and not (path.startswith(stdlib) and path.endswith(".py"))}


class Snapshot:
    """The loaded files as they are now."""

    def __init__(self) -> None:
        self.files = {path: _stamp(path) for path in sorted(_files())}

    def dirs(self) -> dict[bytes, set[bytes]]:
        """{directory: names of the loaded files in it}, for a watch of them."""
        out: dict[bytes, set[bytes]] = {}
        for path in self.files:
            folder, _, name = os.fsencode(path).rpartition(b"/")
            out.setdefault(folder or b"/", set()).add(name)
        return out

    def changed(self) -> str | None:
        """The first loaded file that changed on disk since the snapshot, or None."""
        for path, stamp in self.files.items():
            if _stamp(path) != stamp:
                return path
        return None
