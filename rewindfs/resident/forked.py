"""A `rewind` run as a fork of a process that has imported everything: how the child is made
to start as an exec of `rewind` would, and how it ends.

The resident process (resident.server) forks one child per command a `rewind` client
hands it; the test suite's fork server (tests/forkrun.py) does the same for the tests'
runs. Both use this: the child takes the client's descriptors 0-2 and no other, its
working directory, umask and environment, libgit2's config search path for the new HOME
(`become`), runs the launcher's code, and ends as the interpreter would but for the
teardown of its modules (`finish`). What must match for a fork to stand in for an exec
is what Python reads once at start-up or when pygit2 is imported (`startup_env`).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterable

# What must match between a run's environment and the server's for a fork to start as an
# exec would: Python reads these once, at start-up (its flags and paths; the locale's
# character set, LC_CTYPE alone) or when pygit2 is imported (the TLS certificates).
STARTUP_PREFIXES = ("PYTHON", "SSL_CERT_")
STARTUP_NAMES = ("LC_ALL", "LC_CTYPE", "LANG")
# PYTHON* settings a fork can take as they are: bytecode (everything is imported already)
# and unbuffered output (the child makes its standard streams anew: resident.clichild).
HARMLESS = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONUNBUFFERED")
PRELOAD = ("pygit2", "click", "rich.console", "rich.table", "rich.text", "rich.markup",
           "rich.pager", "rich.panel", "rich.progress", "sqlite3", "concurrent.futures",
           "isal.isal_zlib", "urllib.parse")
MOUNT_PRELOAD = ("pyfuse3", "trio")
# What a resident process never imports ahead: the mount, and the UI and the MCP server,
# whose commands it does not run (resident.client).
RESIDENT_SKIPS = ("rewindfs.fs", "rewindfs.ui", "rewindfs.mcpserver")


def startup_env(env: dict[str, str], tls: bool = True) -> dict[str, str]:
    """What of `env` a fork must share with its server to start as an exec would; `tls`
    False: not the TLS certificates (read by pygit2 for remotes alone, which the resident
    process does not serve)."""
    prefixes = STARTUP_PREFIXES if tls else STARTUP_PREFIXES[:1]
    return {k: v for k, v in env.items()
            if (k.startswith(prefixes) or k in STARTUP_NAMES) and k not in HARMLESS}


def preload(skip: tuple[str, ...], mount: bool = False) -> None:
    """Every module of rewindfs a command may import (none runs code at import beyond
    definitions, but `rewindfs.cli`'s Ctrl-C handler: as at any start) but those named in
    `skip` (and below them), and the libraries they import lazily; the mount's libraries
    (pyfuse3, trio) only with `mount`."""
    import importlib
    import pkgutil

    import rewindfs

    for name in (*PRELOAD, *(MOUNT_PRELOAD if mount else ())):
        importlib.import_module(name)
    for found in pkgutil.walk_packages(rewindfs.__path__, "rewindfs.",
                                       onerror=lambda name: None):
        if found.name.endswith(".__main__") or found.name.startswith(skip):
            continue
        importlib.import_module(found.name)
    from rewindfs.cli import group

    group.load_all()


def become(fds: list[int], cwd: str, env: dict[str, str], umask: int,
           sockets: Iterable[socket.socket] = (), keep: Iterable[int] = ()) -> None:
    """This process, just forked, as an exec with `fds` for 0-2 would have started it:
    `sockets` (the server's) forgotten, every other descriptor closed but `keep`."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for sock in sockets:  # closed below: their objects must never close the numbers again
        sock.detach()
    kept = sorted(set(keep))
    low = 3
    for fd in kept:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)
    os.umask(umask)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    git_search_path()


def finish(code: int, said: Callable[[int], None] | None = None) -> None:
    """End the run as the interpreter would, leaving out only the teardown of modules.

    What a command can see of Python's exit is kept, in its order: the wait for threads
    that are not daemons, the atexit functions, the flush of stdout and stderr (where that
    fails, the interpreter does the whole exit itself, and reports it as it would have).
    What is left out is freeing the objects of every module: in a fork that writes to
    most of the server's pages, so the kernel copies each first (~22 ms of CPU a run).
    rewindfs keeps nothing alive to the end whose finalizer does more than close a
    descriptor, which the exit closes. `said(code)` is called last, once everything is
    written (the resident process's client learns the status from it).
    """
    import atexit
    import threading

    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        sys.exit(code)
    if said is not None:
        said(code)
    os._exit(code)


def exit_code(exc: SystemExit) -> int | None:
    """The status a SystemExit ends with; None when the interpreter must end it itself
    (a message to print)."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else None


def git_search_path() -> None:
    """libgit2 looked for the user's and XDG config below HOME when pygit2 was imported
    (in the server): look where this run's HOME says, as libgit2 would have guessed."""
    import pygit2
    from pygit2.enums import ConfigLevel

    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    pygit2.settings.search_path[ConfigLevel.GLOBAL] = home
    pygit2.settings.search_path[ConfigLevel.XDG] = os.path.join(xdg, "git")
