"""Before and after a mount: is FUSE usable, is the mountpoint fit, starting in the
background, unmounting.

A mount process that died leaves its mountpoint answering ENOTCONN to everything;
that is detected and cleared (lazy unmount) before mounting again.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import subprocess
import time
from enum import Enum
from pathlib import Path

from rewindfs.errors import Busy, InvalidInput, Refused, RewindError
from rewindfs.store.objects import Layout, mounts, private

FUSE_DEVICE = Path("/dev/fuse")
FUSERMOUNT = "fusermount3"
OUR_FSTYPE = mounts.REWINDFS_FSTYPE
mounted_type = mounts.mounted_type  # what is mounted exactly at a path
READY = b"ready\n"
INSTALL_HINT = "install FUSE 3 (apt-get install fuse3)"
# pyfuse3 compiles against libfuse3's headers (no wheels on PyPI): an install on a machine
# without them has everything but the mount (pyproject's `mount` extra).
PYFUSE3_HINT = ("the mount needs pyfuse3, which is not installed: sudo apt-get install "
                "libfuse3-dev pkg-config, then run scripts/install again (or pip install "
                "'rewindfs[mount]')")


class FuseUnavailable(RewindError):
    """This machine (or container) cannot mount FUSE filesystems."""


class MountState(Enum):
    NONE = "not mounted"
    MOUNTED = "mounted"
    STALE = "stale"  # the serving process is gone: every access fails with ENOTCONN


def check_pyfuse3() -> None:
    """FuseUnavailable saying how to get pyfuse3 when it is not installed (nothing imported)."""
    from importlib.util import find_spec

    if find_spec("pyfuse3") is None or find_spec("trio") is None:
        raise FuseUnavailable(PYFUSE3_HINT)


def check_fuse() -> str:
    """The path of fusermount3, or FuseUnavailable saying what to install or allow."""
    fusermount = shutil.which(FUSERMOUNT)
    if fusermount is None:
        raise FuseUnavailable(f"{FUSERMOUNT} not found: {INSTALL_HINT}")
    if not FUSE_DEVICE.exists():
        raise FuseUnavailable(f"{FUSE_DEVICE} is missing: {INSTALL_HINT}; in a container "
                              "also pass --device /dev/fuse --cap-add SYS_ADMIN")
    try:
        os.close(os.open(FUSE_DEVICE, os.O_RDWR | os.O_CLOEXEC))
    except OSError as exc:
        raise FuseUnavailable(f"cannot open {FUSE_DEVICE}: {exc.strerror}") from None
    return fusermount


def mount_mode(path: Path) -> str | None:
    """How the rewindfs mount at `path` is served (kernel cache or stock), or None."""
    try:
        return os.getxattr(path, "user.rewind.mount-mode").decode(errors="replace")
    except OSError:
        return None


def mount_state(path: Path) -> MountState:
    try:
        # Opening sends a request (stat may be answered from cached attributes).
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    except OSError as exc:
        if exc.errno == errno.ENOTCONN:
            return MountState.STALE
        return MountState.NONE
    return MountState.MOUNTED if mounted_type(path) is not None else MountState.NONE


def project_around(path: Path, layout: Layout) -> Path | None:
    """The project `path` is in or is (a registered working directory, or the nearest
    directory holding a project marker such as .git), or None. A mount there would be
    captured by the project's next checkpoint, or hide the project."""
    from rewindfs.agent.workdir import PROJECT_MARKERS, project_root
    from rewindfs.store.history import projects

    registered: set[Path] = set()
    if (layout.store / "HEAD").exists():
        try:
            registered = {r.workdir for r in projects.list_records(layout)}
        except (OSError, RewindError):
            registered = set()
    for folder in (path, *path.parents):
        if folder in registered:
            return folder
    root = project_root(path, registered)
    if root != path and any((root / marker).exists() for marker in PROJECT_MARKERS):
        return root
    return None


def prepare_mountpoint(mountpoint: str | os.PathLike[str], layout: Layout, *,
                       force: bool = False) -> Path:
    """An absolute, existing, empty-of-mounts directory where `layout`'s store may be shown.

    Unless `force`: not inside a project or over one, and not over a directory that
    has files (they would be hidden while mounted)."""
    path = Path(os.path.abspath(os.path.expanduser(mountpoint)))
    state = mount_state(path)
    if state is MountState.STALE:
        unmount(path, lazy=True)
    elif state is MountState.MOUNTED:
        kind = mounted_type(path)
        if kind == OUR_FSTYPE:
            raise Refused(f"rewindfs is already mounted at {path} (rewind umount {path})")
        raise Refused(f"{path} already has a {kind} filesystem mounted on it")
    path = path.resolve()
    store = layout.store.resolve()
    if path == store or store in path.parents:
        raise Refused(f"refusing to mount at {path}: it is inside the checkpoint store")
    if path in store.parents:
        raise Refused(f"refusing to mount at {path}: it would hide the checkpoint store {store}")
    if not force:  # checked before anything is created
        project = project_around(path, layout)
        if project is not None:
            where = "over the project" if project == path else f"inside the project {project}"
            raise Refused(f"refusing to mount at {path}: it is {where} (its checkpoints "
                          "would capture the mount); choose another place, or --force")
        if path.is_dir():
            try:
                with os.scandir(path) as entries:
                    busy = any(entries)
            except OSError as exc:
                raise InvalidInput(f"cannot read mountpoint {path}: {exc.strerror}") from None
            if busy:
                raise Refused(f"refusing to mount at {path}: it is not empty (its files would "
                              "be hidden); choose an empty directory, or --force")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InvalidInput(f"mountpoint {path} is not a directory") from None
    if not path.is_dir():
        raise InvalidInput(f"mountpoint {path} is not a directory")
    return path


def unmount(mountpoint: str | os.PathLike[str], *, lazy: bool = False) -> Path:
    """Unmount the FUSE filesystem at `mountpoint` (lazy: detach now, release when unused)."""
    path = Path(os.path.abspath(os.path.expanduser(mountpoint)))
    state = mount_state(path)
    if state is MountState.NONE:
        raise InvalidInput(f"nothing is mounted at {path}")
    kind = mounted_type(path)
    if state is MountState.MOUNTED and kind is not None and not kind.startswith("fuse"):
        raise Refused(f"{path} is a {kind} mount, not rewindfs")
    fusermount = check_fuse()
    cmd = [fusermount, "-u", *(["-z"] if lazy or state is MountState.STALE else []), str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        reason = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"
        if "busy" in reason.lower():
            raise Busy(f"{path} is busy (a shell or program is using it); leave it, "
                          "or use --lazy to detach it now")
        raise Refused(f"could not unmount {path}: {reason}")
    return path


def spawn_background(argv: list[str], mountpoint: Path, log_path: Path,
                     timeout: float = 30.0) -> None:
    """Start `argv` (a foreground mount told to report on a pipe) and wait until it is ready.

    The child runs in its own session (a closing terminal does not kill it), from
    `/` (it keeps no directory busy), and writes `ready` or its one-line error to the
    pipe whose number replaces `{ready_fd}` in `argv`.
    """
    try:
        # 0600 in a 0700 logs/ whatever the umask; a symlink planted at its name is
        # refused, never followed.
        log = private.open_append(log_path)
    except OSError as exc:
        raise Refused(f"cannot write the mount log {log_path}: {exc.strerror} (a symlink or "
                      "something other than a file is there?)") from None
    read_end, write_end = os.pipe()
    try:
        child = subprocess.Popen(
            [a.replace("{ready_fd}", str(write_end)) for a in argv], pass_fds=(write_end,),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, cwd="/",
            start_new_session=True)
    finally:
        os.close(log)
    os.close(write_end)
    try:
        message = _read_until_eof(read_end, time.monotonic() + timeout)
    finally:
        os.close(read_end)
    if message == READY:
        return
    if message:
        raise Refused(message.decode(errors="replace").strip().removeprefix("error: "))
    code = child.poll()
    if code is None:
        child.terminate()
        raise Refused(f"the mount at {mountpoint} did not become ready in {timeout:.0f} s "
                      f"(see {log_path})")
    raise Refused(f"the mount process exited with status {code} (see {log_path})")


def _read_until_eof(fd: int, deadline: float) -> bytes:
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return data
        chunk = os.read(fd, 4096)
        if not chunk:
            return data
        data += chunk
        if data.endswith(READY):
            return data
