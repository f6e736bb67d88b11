"""Writing an agent's config file as the person keeps it: through a symlink to its target,
with its owner, group and mode, and never someone else's file unless told to.

An agent's settings often live in a dotfiles repository (`~/.claude/settings.json` a
symlink into it): the write goes to the link's target, atomically (a temporary file in
the target's directory, then a rename), and the link stays. The file keeps its mode,
owner and group. A file the invoking user does not own (an install run with sudo on
someone's settings), or a new file in a directory someone else owns, is refused with
one line unless `other_owner` allows it; then the file stays its owner's.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from rewindfs.errors import Refused

DEFAULT_MODE = 0o644
OTHER_OWNER_FLAG = "--allow-other-owner"


@dataclass(frozen=True)
class Target:
    """Where a config path's bytes really live, and whose they are."""

    path: Path             # the file written (a symlink's target)
    exists: bool
    mode: int              # the file's permission bits (DEFAULT_MODE for a new one)
    uid: int               # its owner (a new file: its directory's)
    gid: int


def target(path: Path) -> Target:
    """The file `path` names (through symlinks); a new file's owner is its directory's."""
    real = Path(os.path.realpath(path))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        folder = real.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        dst = os.stat(folder)
        return Target(real, False, DEFAULT_MODE, dst.st_uid, dst.st_gid)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{path} is not a regular file; left as it is")
    return Target(real, True, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def check_owner(shown: Path, where: Target, other_owner: bool) -> None:
    """Refuse (one line) to write a file, or into a directory, the invoking user does not
    own, unless `other_owner`."""
    me = os.geteuid()
    if where.uid == me or other_owner:
        return
    what = "is owned by" if where.exists else "would be created in a directory owned by"
    raise Refused(f"{shown} {what} {_user(where.uid)}, not by you ({_user(me)}); left as it "
                  f"is (run it as that user, or add {OTHER_OWNER_FLAG} to write it and "
                  "keep it theirs)")


def make_dirs(path: Path) -> None:
    """The missing folders above the file `path` names, made as `mkdir -p` would and
    given to the owner of the folder they are made in (an install into someone's home
    that `check_owner` let through leaves nothing there that is not theirs)."""
    folder, missing = Path(os.path.realpath(path)).parent, []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    owner = os.stat(folder)
    for made in reversed(missing):
        made.mkdir(exist_ok=True)
        if (owner.st_uid, owner.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(made, owner.st_uid, owner.st_gid)


def write(path: Path, data: bytes, other_owner: bool = False) -> None:
    """Replace the file `path` names with `data`, atomically, keeping its mode, owner and
    group (see the module's docstring)."""
    where = target(path)
    check_owner(path, where, other_owner)
    folder = where.path.parent
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{where.path.name}.rewind-{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if where.uid != os.geteuid() or where.gid != os.getegid():
                os.fchown(fd, where.uid, where.gid)
            os.fchmod(fd, where.mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, where.path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove(path: Path, other_owner: bool = False) -> None:
    """Remove the regular file `path` (install made it: it was not there before)."""
    check_owner(path, target(path), other_owner)
    os.unlink(path)


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"
