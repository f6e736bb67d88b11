"""Talking to a remote: git's own `push` and `fetch`, run on the store.

git itself, not libgit2, is the transport, because it is what already works with the
user's remotes: ssh through their ssh client, config and agent; https through their
credential helpers (libgit2 reads neither helper nor `~/.ssh/config`); protocol v2;
atomic pushes with a compare-and-swap per ref (`--force-with-lease`), which libgit2's
push lacks; and git's pack building and indexing, which are the baseline speed.

Unlike the maintenance commands (objects.gitcli), these read the user's git
configuration (credential helpers, `url.*.insteadOf`, proxies, `core.sshCommand`),
with the settings that could act on the store or hang a background push pinned:
no hooks, no gc or maintenance, no submodules, no signing, no commit graphs, and
every fetched object checked (`transfer.fsckObjects`). Credentials never pass
through rewindfs: git asks the helper or the agent itself, and whatever git prints
is redacted before rewindfs shows or logs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rewindfs.errors import StoreError
from rewindfs.store.objects.gitcli import git_binary
from rewindfs.store.objects.layout import Layout
from rewindfs.store.remote import deadline
from rewindfs.store.remote.names import redact

PINNED = ("core.hooksPath=/dev/null", "gc.auto=0", "maintenance.auto=false",
          "fetch.writeCommitGraph=false", "core.commitGraph=false", "push.gpgSign=false",
          "push.followTags=false", "push.recurseSubmodules=no", "fetch.recurseSubmodules=no",
          "submodule.recurse=false", "transfer.fsckObjects=true", "fetch.prune=false",
          "fetch.pruneTags=false", "fetch.showForcedUpdates=false",
          # A remote's big blobs are hashed and checked in pieces, never whole in git's
          # memory (its default streams only those over 512 MiB).
          "core.bigFileThreshold=8m")
ALLOWED_PROTOCOLS = "file:git:ssh:http:https"  # GIT_ALLOW_PROTOCOL: names.SCHEMES' transports
# Transport settings a user may give through the environment; every other GIT_* (a
# GIT_DIR, GIT_INDEX_FILE or GIT_OBJECT_DIRECTORY of a calling git) is dropped.
KEPT_ENV = {"GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_ASKPASS",
            "GIT_TERMINAL_PROMPT", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "GIT_SSL_NO_VERIFY",
            "GIT_PROXY_COMMAND", "GIT_HTTP_USER_AGENT", "GIT_CONFIG_GLOBAL", "GIT_TRACE",
            "GIT_TRACE_PACKET", "GIT_CURL_VERBOSE"}
GENERIC = ("early eof", "index-pack failed", "remote end hung up", "failed to push some refs",
           "could not read from remote repository", "invalid index-pack output",
           "please make sure you have the correct access", "unpack-objects abnormal exit",
           "aborting due to possible repository corruption on the remote side")


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str  # redacted


def run(layout: Layout, args: Sequence[str], *, progress: bool = False,
        interactive: bool = True, stall: float = deadline.STALL,
        stop: Callable[[], str | None] | None = None) -> Outcome:
    """`git args` on the store. With `progress`, git's progress goes to our stderr as it
    comes (and is kept for the error message); without `interactive` git never prompts.
    Watched (store.remote.deadline): Stalled when it makes no progress for `stall`
    seconds, or when `stop()` names a reason to end it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") or k in KEPT_ENV}
    env["GIT_DIR"] = str(layout.store)
    env["LC_ALL"] = "C"  # git's messages are parsed
    # Only the transports rewindfs supports, whatever the user's config allows (an
    # `insteadOf` rewrite to ext:: or a remote helper included): this overrides every
    # protocol.*.allow setting.
    env["GIT_ALLOW_PROTOCOL"] = ALLOWED_PROTOCOLS
    if not interactive:
        env["GIT_TERMINAL_PROMPT"] = "0"
    argv = [git_binary()]
    for item in PINNED:
        argv += ["-c", item]
    argv += list(args)
    try:
        proc = subprocess.Popen(argv, env=env, cwd=layout.store, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                stdin=None if interactive else subprocess.DEVNULL)
    except OSError as exc:
        raise StoreError(f"cannot run git: {exc.strerror or exc}") from None
    said: list[bytes] = []
    out: list[bytes] = []
    readers = [threading.Thread(target=_drain, args=(proc.stdout, out, False), daemon=True),
               threading.Thread(target=_drain, args=(proc.stderr, said, progress), daemon=True)]
    try:
        for reader in readers:
            reader.start()
        deadline.watch(proc, stall, lambda: sum(map(len, said)) + sum(map(len, out)), stop)
        for reader in readers:
            reader.join()
    except BaseException:
        deadline.kill_tree(proc.pid)
        proc.wait()
        raise
    return Outcome(proc.returncode, b"".join(out).decode("utf-8", "replace"),
                   redact(b"".join(said).decode("utf-8", "replace")))


def _drain(stream, into: list[bytes], echo: bool) -> None:
    while chunk := stream.read1(65536):
        into.append(chunk)
        if echo:
            try:
                sys.stderr.buffer.write(redact(chunk.decode("utf-8", "replace")).encode())
                sys.stderr.buffer.flush()
            except (OSError, ValueError):
                echo = False
    stream.close()


def reason(stderr: str, fallback: str) -> str:
    """The line of git's output that says what went wrong (not the generic last words)."""
    lines = [ln.strip() for ln in stderr.replace("\r", "\n").splitlines() if ln.strip()]
    said = [ln for ln in lines if _is_error(ln)]
    specific = [ln for ln in said if not any(g in ln.lower() for g in GENERIC)]
    chosen = (specific or said or lines or [fallback])[0]
    return " ".join(chosen.split())


def _is_error(line: str) -> bool:
    bare = line[len("remote: "):] if line.startswith("remote: ") else line
    return bare.startswith(("fatal:", "error:", "ERROR:")) or "Permission denied" in bare \
        or "Could not resolve" in bare or "Connection refused" in bare


@dataclass(frozen=True)
class RefResult:
    flag: str  # git's: ' ' fast-forward, '+' forced, '-' deleted, '*' new, '=' up to date,
    #            '!' rejected
    summary: str

    @property
    def ok(self) -> bool:
        return self.flag != "!"

    @property
    def stale(self) -> bool:
        """Rejected because the remote's ref is not what the lease expected."""
        return self.flag == "!" and "stale info" in self.summary


def lost_race(outcome: Outcome, results: dict[str, RefResult]) -> bool:
    """Whether a push failed because the remote's refs moved under it: a lease that no
    longer holds, or git's lock of a ref another push (another copy of this store,
    pushing as this machine at the same moment) held: worth looking again."""
    said = " ".join([outcome.stderr, *(r.summary for r in results.values())])
    return any(r.stale for r in results.values()) or any(
        sign in said for sign in ("cannot lock ref", "failed to lock", "incorrect old value",
                                  "reference already exists"))


def push_results(stdout: str) -> dict[str, RefResult]:
    """`git push --porcelain`'s lines, by remote ref."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1 and ":" in parts[1]:
            out[parts[1].rsplit(":", 1)[1]] = RefResult(parts[0], parts[2])
    return out
