"""Compile the bytecode of what `rewind` runs with (rewindfs's dependencies, all the way
down) in the venv whose Python runs this, as pip would have at install time.

    .venv/bin/python scripts/compile_runtime.py [DIST]   (DIST: rewindfs)

scripts/setup installs with uv, which writes no bytecode. Where Python may write it, the
first import does; but under PYTHONDONTWRITEBYTECODE every start of `rewind` would compile
trio, rich, pygit2... again (~0.4 s each time). The test extras (Hermes Agent's tree: most
of the venv, ~7 s to compile) are left to their first import: scripts/test keeps its own
bytecode cache (PYTHONPYCACHEPREFIX) under PYTHONDONTWRITEBYTECODE anyway.
"""

from __future__ import annotations

import compileall
import importlib.metadata as metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path


def runtime_closure(*names: str) -> Iterator[metadata.Distribution]:
    """`names` and every distribution they require, extras' requirements left out."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        key = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(key)
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform or Python: nothing installed
        yield dist
        for requirement in dist.requires or []:
            if "extra" not in requirement.partition(";")[2]:
                todo.append(re.match(r"[A-Za-z0-9._-]+", requirement).group())


def main(argv: list[str]) -> int:
    top = argv[0] if argv else "rewindfs"
    sources = [Path(dist.locate_file(f)) for dist in runtime_closure(top)
               for f in dist.files or [] if f.suffix == ".py"]
    # One process: a pool of workers was no faster for these ~800 files (~1.2 s). A file
    # that does not compile is skipped, as pip skips it.
    for path in sources:
        compileall.compile_file(path, quiet=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
