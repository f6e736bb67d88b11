"""Which Linux-only calls rewindfs may use here; each has a portable fallback, and
``REWIND_PORTABLE`` turns the Linux path off so that the fallback runs (and is tested) on
Linux too, paving the way to macOS and the BSDs.

    REWIND_PORTABLE=1 (or all)          every fallback
    REWIND_PORTABLE=renameat2,pidfd     those named (CALLS below)

- ``renameat2``: RENAME_NOREPLACE; fallback a hard link then unlink, or an O_EXCL copy
  (restore.noreplace).
- ``pidfd``: pidfd_open/pidfd_send_signal; fallback the socket or parent the process
  holds, and kill(2) only while that proves the pid is still the process's
  (hooks.helper's abandon, cli.watchdog).
- ``proc``: /proc; fallbacks: the mount table from mount(8), the process umask by
  umask(2) itself, a lock holder's command line from ps(1), a stopped command from
  ps(1), the helper's socket by its path, no mapped-library watch (hooks.loaded).
- ``o_path``: O_PATH; fallback the file opened read-only (or write-only) without
  following links, checked to be the same inode (restore.fdtree).
- ``block-signal``: coreutils' `env --block-signal` in the `rewind` launcher; fallback the
  plain launcher (an interrupt during the interpreter's own start-up then gets Python's
  answer) (scripts/setup, scripts/install).
- ``fork``: the hooks' resident helper, which forks a child per request; fallback the
  hook takes each checkpoint itself (hooks.helper), as with REWIND_HOOK_HELPER=0.
"""

from __future__ import annotations

import os
import sys

ENV = "REWIND_PORTABLE"
CALLS = ("renameat2", "pidfd", "proc", "o_path", "block-signal", "fork")
_ALL = {"1", "all", "yes", "on", "true"}


def off() -> frozenset[str]:
    """The Linux paths REWIND_PORTABLE turns off (names outside CALLS are ignored)."""
    words = {w.strip().lower() for w in os.environ.get(ENV, "").split(",") if w.strip()}
    if words & _ALL:
        return frozenset(CALLS)
    return frozenset(words & set(CALLS))


def linux(call: str) -> bool:
    """Whether the Linux-only `call` (one of CALLS) may be used: on Linux, unless
    REWIND_PORTABLE turns it off."""
    return sys.platform.startswith("linux") and call not in off()
