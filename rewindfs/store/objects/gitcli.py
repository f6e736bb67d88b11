"""Running the git command line against the store.

libgit2 (and so pygit2) has no gc, repack or prune: reclaiming space needs git
itself. Every call is isolated from the user's configuration (signing, hooks,
`gc.auto`, alternates) and pointed at the store with GIT_DIR only, so nothing
ever looks at a working tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from rewindfs.errors import StoreError
from rewindfs.store.objects import liveness
from rewindfs.store.objects.layout import Layout

# Isolation as Hermes does it: user and system config ignored, no inherited GIT_*.
ISOLATION = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull,
             "GIT_CONFIG_NOSYSTEM": "1"}
# Bitmaps and commit graphs are for git readers (libgit2 ignores both), and a bare
# repository writes bitmaps by default. core.fsync=committed: what git writes (a
# repack's packs, packed-refs) reaches the disk before what it replaces is deleted,
# as rewindfs's own writes do (store.objects.durable); git before 2.36 ignores it.
MAINTENANCE_CONFIG = ("repack.writeBitmaps=false", "gc.writeCommitGraph=false",
                      "core.commitGraph=false", "core.fsync=committed")


class GitFailed(StoreError):
    """A git command exited non-zero; `stderr` holds everything it said."""

    def __init__(self, message: str, stderr: str):
        super().__init__(message)
        self.stderr = stderr


def git_env(layout: Layout) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(ISOLATION)
    env["GIT_DIR"] = str(layout.store)
    env.setdefault("LC_ALL", "C")
    return env


def git_binary() -> str:
    path = shutil.which("git")
    if path is None:
        raise StoreError("reclaiming space needs the git command line (apt-get install git)")
    return path


class Running:
    """A git command started in the background (`start`); `output()` waits for it."""

    def __init__(self, layout: Layout, args: Sequence[str]):
        self.args = list(args)
        try:
            self.proc = subprocess.Popen(_argv(args), env=git_env(layout),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, cwd=layout.store)
        except OSError as exc:
            raise StoreError(f"cannot run git {_command(args)}: {exc.strerror or exc}") from None

    def output(self) -> bytes:
        with liveness.patient():  # git's own work (a repack takes what it takes)
            out, err = self.proc.communicate()
        if self.proc.returncode != 0:
            said = err.decode(errors="replace").strip()
            reason = said.splitlines()[0] if said else f"exit status {self.proc.returncode}"
            raise GitFailed(f"git {_command(self.args)} failed: {reason}", said)
        return out

    def cancel(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


def start(layout: Layout, args: Sequence[str]) -> Running:
    """Start `git args` on the store without waiting (it runs next to our own work)."""
    return Running(layout, args)


def _argv(args: Sequence[str]) -> list[str]:
    argv = [git_binary()]
    for item in MAINTENANCE_CONFIG:
        argv += ["-c", item]
    return argv + list(args)


def run(layout: Layout, args: Sequence[str], *, stdin: bytes | None = None,
        show_progress: bool = False, timeout: float | None = None) -> bytes:
    """Run `git args` on the store and return its stdout; StoreError when it fails.

    With `show_progress`, git's own progress output goes to our stderr (a terminal);
    otherwise stderr is captured for the error message.
    """
    argv = _argv(args)
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    try:
        with liveness.patient():  # git's own work (a repack takes what it takes)
            proc = subprocess.run(
                argv, env=git_env(layout), stdout=subprocess.PIPE,
                stderr=None if show_progress else subprocess.PIPE, timeout=timeout,
                cwd=layout.store, **feed,
            )
    except subprocess.TimeoutExpired:
        raise StoreError(f"git {_command(args)} did not finish in {timeout:.0f} s") from None
    except OSError as exc:
        raise StoreError(f"cannot run git {_command(args)}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        said = (proc.stderr or b"").decode(errors="replace").strip()
        reason = said.splitlines()[0] if said else f"exit status {proc.returncode}"
        raise GitFailed(f"git {_command(args)} failed: {reason}", said)
    return proc.stdout


def _command(args: Sequence[str]) -> str:
    """The subcommand's name (global options such as --shallow-file come first)."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("--shallow-file", "-c") else rest[1:]
    return rest[0] if rest else "?"
