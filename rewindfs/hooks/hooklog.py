"""Where the hooks keep their log and per-session state, and the log itself.

Everything lives in ``$HERMES_HOME/rewind-hooks/`` (0700; files 0600), a folder that must
be this user's alone (`private_dir`): created 0700 whatever the umask, and refused when
someone else owns it or can write into it (what is in it steers the hooks: the records
uninstall writes back, the helper's socket, the sessions' memory). The log is one line
per event (``time agent level message``): checkpoints taken, payloads ignored, errors and
checkpoints skipped for time. `rewind hooks status` shows the last error. The hook never
writes to the agent's stdout or stderr: what goes wrong goes here.

Imports nothing from the store but its redactor (plain text, no git), and that only when
it writes a line: the hook's harmless path writes none.
"""

from __future__ import annotations

import os
import stat
import time

TYPE_CHECKING = False  # (typing itself: milliseconds of every hook call)
if TYPE_CHECKING:  # pathlib (with urllib and ipaddress): only once a path is asked for
    from pathlib import Path

HOOK_SECONDS, MAX_HOOK_SECONDS = 20.0, 3600.0   # a hook's deadline (REWIND_HOOK_TIMEOUT)
MAX_LOG_BYTES = 1024 * 1024   # then the log moves to hook.log.1 (one old generation kept)
ERROR, SKIPPED, INFO = "error", "skipped", "info"
_CONTROL = {**dict.fromkeys(range(32), " "), 0x7F: " "}   # what a terminal would act on


def hermes_home() -> Path:
    """As store.layout.default_home, without importing the store."""
    from pathlib import Path

    return Path(_home())


def _home() -> str:
    home = os.environ.get("HERMES_HOME") or os.path.join(os.path.expanduser("~"), ".hermes")
    return os.path.expanduser(home)


def hooks_dir() -> Path:
    return hermes_home() / "rewind-hooks"


def hooks_path() -> str:
    """`hooks_dir` as a string, without pathlib (resident.wire.connect)."""
    return os.path.join(_home(), "rewind-hooks")


def unsafe(st: os.stat_result, path: object) -> str | None:
    """Why the folder whose lstat is `st` is not this user's alone (None: it is)."""
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory (a symlink or a file is there); not used"
    if st.st_uid != os.geteuid():
        return f"{path} belongs to uid {st.st_uid}, not to you; not used"
    if st.st_mode & 0o022:
        return (f"{path} can be written by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                "not used: check what is in it, then chmod 700 it")
    return None


def log_path() -> Path:
    return hooks_dir() / "hook.log"


class Unsafe(PermissionError):
    """A hooks folder someone else owns or can write into: not used."""


def ensure_dir() -> Path:
    return private_dir(hooks_dir())


def private_dir(path: Path, create: bool = True) -> Path:
    """`path` (the Hermes home or below it) as a folder only this user can change. Each
    missing level is made 0700 (set explicitly: the umask has no say), and each existing
    level below the Hermes home must be a real directory (not a symlink) owned by this
    user that no one else can write into (else Unsafe); one that others can read is
    made 0700. `create` False: FileNotFoundError for a missing level."""
    home = hermes_home()
    if not home.is_dir():
        if not create:
            raise FileNotFoundError(f"{home} does not exist")
        home.mkdir(mode=0o700, parents=True, exist_ok=True)   # a person's to place
    current = home
    for part in path.relative_to(home).parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(current, 0o700)
            except FileExistsError:
                pass
            st = os.lstat(current)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                os.chmod(current, 0o700)
                st = os.lstat(current)
        why = unsafe(st, current)
        if why is not None:
            raise Unsafe(why)
        if st.st_mode & 0o077:
            os.chmod(current, 0o700)
    return path


def refusal() -> str | None:
    """Why the hooks folder is not used (someone else can change it), or None."""
    try:
        private_dir(hooks_dir(), create=False)
    except Unsafe as exc:
        return str(exc)
    except OSError:
        pass
    return None


def seconds(name: str, default: float, maximum: float) -> float:
    """The environment's `name` as a number of seconds in (0, maximum]; anything else
    (not a number, inf, nan, zero, negative, too large) is said in one line of the log
    and `default` is used."""
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if 0 < value <= maximum:   # False for nan and inf too
        return value
    write("-", ERROR, f"{name}={text[:40]!r} is not a number of seconds from 0 to "
          f"{maximum:g}: {default:g} used")
    return default


def write(agent: str, level: str, message: str) -> None:
    """Append one line; never raises (a hook that cannot log still must not fail). What
    it says passes the store's redactor (no credential of a command is kept) and loses
    its control characters (`rewind hooks status` prints it to a terminal)."""
    try:
        from rewindfs.store.history import redact

        message = redact(message.translate(_CONTROL))
        ensure_dir()
        path = log_path()
        try:
            if path.stat().st_size > MAX_LOG_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        except FileNotFoundError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        line = f"{stamp} {agent or '-'} {level} {' '.join(message.split())}\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def entries(agent: str | None = None) -> list[tuple[str, str, str, str]]:
    """(time, agent, level, message) of the log, oldest first."""
    out = []
    for path in (log_path().with_name("hook.log.1"), log_path()):
        try:
            text = path.read_text("utf-8", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            parts = line.split(" ", 3)
            if len(parts) == 4 and (agent is None or parts[1] == agent):
                out.append((parts[0], parts[1], parts[2], parts[3]))
    return out
