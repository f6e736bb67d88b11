"""The subjects `bench_mount` times: rewindfs's mount, and `restic mount` / `borg mount`
for the comparison, with what they need to run here.

restic and borg are installed with apt-get when missing (as root; otherwise the command
is printed). Debian's borgbackup runs on the system python3 and only *recommends* a
FUSE binding for it, so an install without recommends (or an existing borg without
one) cannot mount: the binding (python3-pyfuse3, which uses the fuse3 that setup
installs) is installed with it. A tool that still cannot mount, or fails while its
snapshots are made, is left out of the run with the reason printed: the benchmark
never ends in a traceback because a comparison tool is unusable.

`python scripts/bench_mount.py --check-others` prints whether each can mount here and
why not, and installs nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REWIND = [sys.executable, "-m", "rewindfs.cli"]
QUIET_ENV = {"RESTIC_PASSWORD": "bench", "BORG_PASSPHRASE": "",
             "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes"}
BORG_FUSE_PACKAGE = "python3-pyfuse3"


@dataclass
class Subject:
    """One way of looking at the two snapshots: where they are, how to restart it cold."""

    name: str
    new: Path
    old: Path | None
    restart: Callable[[], None] = lambda: None
    stop: Callable[[], None] = lambda: None


class Unavailable(Exception):
    """A comparison tool that cannot take part here; the message says why."""


def sh(command: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> None:
    proc = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True)
    if proc.returncode not in ok:
        raise RuntimeError(f"{command!r} exited {proc.returncode}: {proc.stderr.strip()}")


def wait_mounted(path: Path, proc: subprocess.Popen | None = None, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.ismount(path):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"mount at {path} exited {proc.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{path} not mounted after {timeout} s")


# -- what restic and borg need ------------------------------------------------------------


def borg_mount_problem() -> str | None:
    """Why `borg mount` cannot work here, or None when it can.

    borg looks for its FUSE binding before it opens the repository or checks the
    mountpoint, so asking it to mount a repository that does not exist at a
    mountpoint that does not exist answers that without mounting anything.
    """
    if shutil.which("borg") is None:
        return "borg is not installed"
    with tempfile.TemporaryDirectory(prefix="bench-borg-probe-") as probe:
        try:
            proc = subprocess.run(["borg", "mount", f"{probe}/no-repo", f"{probe}/no-mnt"],
                                  env={**os.environ, **QUIET_ENV,
                                       "BORG_BASE_DIR": f"{probe}/base"},
                                  capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"borg does not run: {exc}"
    text = (proc.stderr + proc.stdout).strip()
    if "Traceback" in text:
        return f"borg does not run: {text.splitlines()[-1]}"
    for line in text.splitlines():
        if "FUSE" in line and "not available" in line:  # "borg mount not available: no FUSE ..."
            return line.strip()
    return None


def missing_packages() -> list[str]:
    """The apt packages restic and borg (with a FUSE binding for its mount) still need."""
    missing = [pkg for tool, pkg in (("restic", "restic"), ("borg", "borgbackup"))
               if shutil.which(tool) is None]
    if "borgbackup" in missing or _is_debian_borg() and borg_mount_problem() is not None:
        missing.append(BORG_FUSE_PACKAGE)
    return missing


def _is_debian_borg() -> bool:
    """The borg on PATH is Debian's (the system python3's binding is what it lacks)."""
    borg = shutil.which("borg")
    if borg is None or shutil.which("dpkg") is None:
        return False
    return subprocess.run(["dpkg", "-S", os.path.realpath(borg)],
                          capture_output=True).returncode == 0


def ensure_tools(progress: Callable[[str], None]) -> None:
    """Install what restic and borg need (as root, with apt-get), else print the command."""
    missing = missing_packages()
    if not missing:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if os.getuid() != 0 or shutil.which("apt-get") is None:
        progress(f"for the restic/borg comparison run: sudo {' '.join(command)}")
        return
    progress(f"installing {' '.join(missing)} for the comparison")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(command, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        proc = subprocess.run(command, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            progress(f"apt-get could not install {' '.join(missing)}: "
                     f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")


def check_others() -> dict[str, str | None]:
    """{tool: None if it can mount here, else why not} (installs nothing)."""
    restic = None if shutil.which("restic") else "restic is not installed"
    return {"restic": restic, "borg": borg_mount_problem()}


# -- subjects -------------------------------------------------------------------------------


def rewind_subject(home: Path, mnt: Path, project: str, name: str = "rewindfs",
                   *flags: str) -> Subject:
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(ROOT)}

    def start() -> None:
        subprocess.run([*REWIND, "mount", str(mnt), *flags], env=env, check=True,
                       capture_output=True)

    def stop() -> None:
        subprocess.run([*REWIND, "umount", str(mnt)], env=env, capture_output=True)

    start()
    folder = mnt / project
    new, old = folder / os.readlink(folder / "1"), folder / os.readlink(folder / "2")

    def restart() -> None:
        stop()
        start()

    return Subject(name, new, old, restart, stop)


def restic_subject(tmp: Path, new_src: Path, old_src: Path) -> Subject:
    if shutil.which("restic") is None:
        raise Unavailable("restic is not installed")
    env = {**os.environ, **QUIET_ENV, "RESTIC_REPOSITORY": str(tmp / "restic-repo"),
           "RESTIC_CACHE_DIR": str(tmp / "restic-cache")}
    sh("restic init -q", env)
    ids = {}  # each backup's summary names its snapshot (no `restic snapshots`: every
    for src in (old_src, new_src):  # restic command spends ~0.4 s of CPU opening the key)
        out = subprocess.run(["restic", "backup", "-q", "--json", str(src)], env=env,
                             capture_output=True, check=True).stdout
        summary = json.loads(out.splitlines()[-1])
        ids[src] = summary["snapshot_id"][:8]  # the mount's ids/ are short ids
    mnt = tmp / "restic-mnt"
    mnt.mkdir()
    procs: list[subprocess.Popen] = []

    def start() -> None:
        procs.append(subprocess.Popen(["restic", "mount", str(mnt)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_mounted(mnt, procs[-1])

    def stop() -> None:
        while procs:
            proc = procs.pop()
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=60)

    def snapshot(src: Path) -> Path:
        return mnt / "ids" / ids[src] / str(src).lstrip("/")

    try:
        start()
    except RuntimeError:
        stop()
        raise
    return Subject("restic", snapshot(new_src), snapshot(old_src),
                   lambda: (stop(), start()), stop)


def borg_subject(tmp: Path, new_src: Path, old_src: Path) -> Subject:
    problem = borg_mount_problem()
    if problem is not None:
        raise Unavailable(problem)
    repo = tmp / "borg-repo"
    env = {**os.environ, **QUIET_ENV, "BORG_BASE_DIR": str(tmp / "borg-base")}
    sh(f"borg init -e none {repo}", env)
    for name, src in (("old", old_src), ("new", new_src)):
        sh(f"borg create {repo}::{name} {src}", env)
    mnt = tmp / "borg-mnt"
    mnt.mkdir()

    def start() -> None:
        proc = subprocess.run(["borg", "mount", str(repo), str(mnt)], env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"borg mount exited {proc.returncode}: {proc.stderr.strip()}")
        wait_mounted(mnt)

    def stop() -> None:
        subprocess.run(["borg", "umount", str(mnt)], env=env, capture_output=True)

    start()
    return Subject("borg", mnt / "new" / str(new_src).lstrip("/"),
                   mnt / "old" / str(old_src).lstrip("/"), lambda: (stop(), start()), stop)


def other_subjects(tmp: Path, new_src: Path, old_src: Path,
                   progress: Callable[[str], None]) -> tuple[list[Subject], dict[str, str]]:
    """restic and borg, each mounted, or left out with the reason (printed as it happens)."""
    made, left_out = [], {}
    for tool, make in (("restic", restic_subject), ("borg", borg_subject)):
        try:
            made.append(make(tmp, new_src, old_src))
            progress(f"{tool}: mounted")
        except (Unavailable, RuntimeError, OSError, subprocess.SubprocessError,
                ValueError, KeyError) as exc:
            left_out[tool] = " ".join(str(exc).split()) or type(exc).__name__
            progress(f"{tool}: left out: {left_out[tool]}")
    return made, left_out
