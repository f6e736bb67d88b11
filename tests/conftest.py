"""Shared fixtures: a fresh Hermes home, a sample project, and runners for the real
`rewind` CLI and the git CLI pointed at the store.

Everything works on real git stores in tmp dirs; nothing here mocks git.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import forkrun
import pytest

if TYPE_CHECKING:
    from agentsim.recorded import Recordings

REWIND = shutil.which("rewind", path=os.path.dirname(sys.executable))
DAY = 86400
# Races (writers against gc, prune, each other) run until every side did this much, with a
# deadline only a hung run meets: never "for N seconds", which proves less on a slow machine.
RACE_DEADLINE = 300.0
RACE_COMMITS = 8

# pytest-xdist's workers (scripts/test) start with COLUMNS=80 in their environment, which
# every `rewind` a test starts would take as the width to lay its tables out for.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

# A suite started in the background of a non-interactive shell (`./scripts/test &` in a
# script) inherits SIGINT ignored, and so would every process a test starts (an exec
# keeps an ignored signal ignored): no Ctrl-C a test sends would ever land.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long` (seconds each) first, the rest in their usual order: xdist's
    workers take tests in this order, and a worker that drew one of these last would run
    it alone while the other cores idle. (xdist still hands out its groups, largest
    first, before single tests.)"""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


# git run against the store must not see the user's or the system's config.
GIT_ISOLATION = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
                 "GIT_CONFIG_SYSTEM": "/dev/null"}


def isolated_git_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ISOLATION)
    env.update(extra)
    return env


# What a process a test starts must not inherit from the person running the tests: git's
# and rewind's own settings, a terminal's pager, colour and width, man's search path.
SCRUBBED_PREFIXES = ("GIT_", "REWIND_", "LESS")
SCRUBBED_NAMES = {"HERMES_HOME", "XDG_CONFIG_HOME", "NO_COLOR", "FORCE_COLOR", "PAGER",
                  "COLUMNS", "LINES", "MANPATH", "MANOPT", "PYTHONPATH"}


def rewind_env(home: Path | None, user_home: Path, **extra: str) -> dict[str, str]:
    """The one environment for every process a test starts (the CLI, a Python worker,
    a shell): HERMES_HOME=`home` (unset when None), HOME an empty directory of the test
    (so ~/.gitconfig, ~/.config/git and ~/.hermes never leak in), C.UTF-8; `extra` last."""
    user_home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED_NAMES}
    env.update(HOME=str(user_home), LC_ALL="C.UTF-8", **served_env())
    if home is not None:
        env["HERMES_HOME"] = str(home)
    env.update(extra)
    return env


# Whether the `rewind` commands tests run are handed to the resident process (as a user's
# are) or run in their own process: in their own by default (a resident process per test
# home would outnumber the tests); with REWIND_TEST_SERVER=1 (scripts/test's second pass
# over tests/cli), through it, which then exits 30 s after a test's last command.
SERVED = os.environ.get("REWIND_TEST_SERVER") == "1"


def served_env() -> dict[str, str]:
    if SERVED:
        return {"REWIND_HOOK_HELPER_IDLE": "30"}
    return {"REWIND_NO_SERVER": "1"}


def age(layout, workdir: Path, days: float) -> None:
    """Pretend the project was last touched `days` ago (as Hermes would have written it)."""
    from rewindfs.store import project_hash

    path = layout.project_record(project_hash(workdir))
    data = json.loads(path.read_text())
    data["last_touch"] = time.time() - days * DAY
    path.write_text(json.dumps(data))


def flocks(path: Path) -> list[tuple[bool, str, int]]:
    """Every flock on `path` now, from /proc/locks: (waiting, "READ" or "WRITE", pid).

    What a test waits for instead of sleeping: a process that holds or waits for a
    lock is visible there the moment it does."""
    st = os.stat(path)
    dev_ino = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    found = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        waiting = len(fields) > 1 and fields[1] == "->"
        if waiting:
            del fields[1]
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == dev_ino:
            found.append((waiting, fields[3], int(fields[4])))
    return found


PAUSE_RESTORE = "REWIND_TEST_PAUSE_RESTORE"  # rewindfs.restore.pause: stop after N files


def signal_when_paused(proc: subprocess.Popen, sig: int, deadline: float = 120
                       ) -> tuple[bool, int, str, str]:
    """For a `rewind` restore started with PAUSE_RESTORE=N (stderr a pipe): wait until it
    says it paused after N files, send `sig`, and wait for it to end. Returns (paused,
    returncode, stdout, stderr); paused False: it ended first (the plan had fewer files),
    and got no signal."""
    said = b""
    end = time.monotonic() + deadline
    fd = proc.stderr.fileno()
    while b"rewind: test pause" not in said:
        left = end - time.monotonic()
        assert left > 0, f"the restore never paused: {said!r}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            said += chunk
    paused = b"rewind: test pause" in said
    if paused:
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=deadline)
    return paused, proc.returncode, out, said.decode(errors="replace") + err


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HERMES_HOME (checkpoints go to <home>/checkpoints)."""
    path = tmp_path / "hermes-home"
    path.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(path))
    for name in [k for k in os.environ if k.startswith("REWIND_")]:
        monkeypatch.delenv(name)
    return path


@pytest.fixture
def store_dir(home: Path) -> Path:
    return home / "checkpoints" / "store"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small sample project: a few text files in nested directories."""
    root = tmp_path / "proj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "README.md").write_text("# sample\n\nA sample project.\n")
    (root / "src" / "pkg" / "__init__.py").write_text("")
    (root / "src" / "pkg" / "core.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    (root / "docs" / "guide.txt").write_text("line 1\nline 2\nline 3\n")
    return root


@pytest.fixture
def demo(home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(home, workdir) of `rewind ui`'s demo project (scripts/uidemo.py: three checkpoints
    of an agent's turns, notes.md deleted since)."""
    scripts = str(Path(__file__).resolve().parent.parent / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    import uidemo

    workdir = tmp_path / "shop"
    uidemo.build(home, workdir)
    return home, workdir


@pytest.fixture
def store(home: Path):
    """A rewindfs Store object on the test home (created lazily by the first checkpoint)."""
    from rewindfs.store import Layout, Store

    return Store(Layout(home / "checkpoints"))


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """An empty HOME for the processes a test starts (see rewind_env)."""
    path = tmp_path / "user-home"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def child_env(home: Path, user_home: Path) -> Callable[..., dict[str, str]]:
    """child_env(**extra): rewind_env for this test's home and user home."""
    return lambda **extra: rewind_env(home, user_home, **extra)


@pytest.fixture
def layout(home: Path):
    """The Layout of the test home's checkpoint base."""
    from rewindfs.store import Layout

    return Layout(home / "checkpoints")


@pytest.fixture
def mgr(home: Path):
    """A CheckpointManager (rewindfs's API, enabled) on the test home."""
    from test_restore_helpers import manager

    return manager(home)


def upstream_hermes():
    """Upstream Hermes's checkpoint module (hermes-agent 0.19, a test dependency: its
    absence is a broken install, never a skip)."""
    if shutil.which("git") is None:
        pytest.fail("Hermes's manager needs the git CLI: run scripts/setup")
    try:
        import tools.checkpoint_manager as module
    except Exception as exc:  # noqa: BLE001 - any import failure: not installed or broken
        pytest.fail(f"hermes-agent is a test dependency (pip install -e '.[test]'): "
                    f"{type(exc).__name__}: {exc}")
    return module


@pytest.fixture
def hcm(home: Path, monkeypatch: pytest.MonkeyPatch):
    """Upstream Hermes's tools.checkpoint_manager with its store in the test home."""
    module = upstream_hermes()
    monkeypatch.setattr(module, "CHECKPOINT_BASE", home / "checkpoints")
    return module


@pytest.fixture(scope="session", autouse=True)
def fork_server(tmp_path_factory) -> Iterator[forkrun.Server | None]:
    """This worker's fork server (tests/forkrun.py); None with REWIND_TEST_EXEC=1."""
    if REWIND is None or os.environ.get("REWIND_TEST_EXEC") == "1":
        yield None
        return
    server = forkrun.Server(REWIND, rewind_env(None, tmp_path_factory.mktemp("forkrun-home")))
    forkrun.server = server
    yield server
    forkrun.server = None
    server.close()


@pytest.fixture(scope="session")
def mount_server(tmp_path_factory) -> Iterator[forkrun.Server | None]:
    """This worker's fork server for foreground mounts (imported rewindfs.fs too), started
    on the first forked mount; None with REWIND_TEST_EXEC=1."""
    if REWIND is None or os.environ.get("REWIND_TEST_EXEC") == "1":
        yield None
        return
    server = forkrun.Server(REWIND, rewind_env(None, tmp_path_factory.mktemp("forkrun-home")),
                            mount=True)
    yield server
    server.close()


@pytest.fixture
def run_rewind(child_env, fork_server) -> Callable[..., subprocess.CompletedProcess]:
    """Run the installed `rewind` console script as a subprocess (environment: rewind_env;
    pass env= to add or override variables): forked from this worker's fork server
    (tests/forkrun.py), or exec'd where a fork could not start as an exec would."""
    if REWIND is None:
        pytest.fail("the `rewind` console script is not installed next to the interpreter")

    def run(*args: str, cwd: str | os.PathLike[str] | None = None,
            env: dict[str, str] | None = None, timeout: float = 30,
            check: bool = False) -> subprocess.CompletedProcess:
        proc = forkrun.run(REWIND, list(args), cwd=cwd, env=child_env(**(env or {})),
                           timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"rewind {' '.join(map(str, args))} exited {proc.returncode}\n"
                f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    return run


@contextmanager
def small_tmpfs(mnt: Path, size: str, options: str = "") -> Iterator[Path]:
    """A tmpfs of `size` (mount's size=, such as 1m; more mount `options`, such as
    nr_inodes=400) mounted at `mnt`, unmounted afterwards; skips, saying why, where it
    cannot be mounted (it needs root)."""
    if os.geteuid() != 0:
        print("SKIPPED: mounting a size-limited tmpfs needs root")
        pytest.skip("mounting a size-limited tmpfs needs root")
    mnt.mkdir(exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755"
                           + (f",{options}" if options else ""), "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"SKIPPED: cannot mount a tmpfs: {proc.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.fixture
def user(tmp_path: Path, run_rewind):
    """`rewind` run for a user of its own: a fresh HOME (`.home`), where the agents keep
    their settings, so hooks and MCP installs go there; check=True by default."""
    home = tmp_path / "user"
    home.mkdir()

    def rewind(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run_rewind(*args, env={"HOME": str(home)}, check=check)

    rewind.home = home
    return rewind


@pytest.fixture
def as_nobody() -> list[str]:
    """The command prefix that runs a program as user nobody (group nogroup, no
    supplementary groups); skips, saying why, where that cannot be done."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot drop to user nobody")
    if os.geteuid() != 0:
        pytest.skip("needs root to chown files and switch to user nobody")
    prefix = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    # A checkout inside a private directory (mktemp -d is 0700) hides the venv from nobody.
    probe = subprocess.run([*prefix, sys.executable, "-c", "import rewindfs.store"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"user nobody cannot import rewindfs from {sys.executable}: "
                    f"{probe.stderr.strip().splitlines()[-1:]}")
    return prefix


@pytest.fixture
def store_git(store_dir: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Run the git CLI on the store (GIT_DIR=store, user/system config ignored)."""

    def git(*args: str, check: bool = True, text: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            ["git", *args], env=isolated_git_env(GIT_DIR=str(store_dir)),
            capture_output=True, text=text, timeout=60, stdin=subprocess.DEVNULL,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    return git


@pytest.fixture
def fsck(store_git) -> Callable[[], None]:
    """Assert `git fsck --strict` on the store exits 0."""

    def check() -> None:
        proc = store_git("fsck", "--strict", check=False)
        assert proc.returncode == 0, f"git fsck --strict failed:\n{proc.stdout}{proc.stderr}"

    return check


def make_git_repo(path: Path, files: dict[str, bytes] | None = None, commit: bool = True) -> None:
    """`git init` a repository at `path` (in a tmp dir) and optionally commit `files`."""
    path.mkdir(parents=True, exist_ok=True)
    env = isolated_git_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                           GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "init", "-q", str(path)], env=env, check=True)
    for rel, data in (files or {}).items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if commit and files:
        subprocess.run(["git", "-C", str(path), "add", "-A"], env=env, check=True)
        subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", "init"], env=env,
                       check=True)


@pytest.fixture
def git_repo_factory() -> Callable[..., None]:
    return make_git_repo


def flatten_tree(repo, tree, prefix: bytes = b"") -> dict[bytes, tuple[int, bytes]]:
    """{path bytes: (filemode, blob bytes)} for every non-tree entry under `tree`."""
    import pygit2

    out: dict[bytes, tuple[int, bytes]] = {}
    for entry in tree:
        path = prefix + entry.raw_name
        if entry.filemode == pygit2.enums.FileMode.TREE:
            out.update(flatten_tree(repo, repo[entry.id], path + b"/"))
        elif entry.filemode == pygit2.enums.FileMode.COMMIT:
            out[path] = (entry.filemode, b"")
        else:
            out[path] = (entry.filemode, repo[entry.id].data)
    return out


@pytest.fixture
def files_of(store_dir: Path) -> Callable[[str], dict[bytes, tuple[int, bytes]]]:
    """files_of(commit_hex) -> {path bytes: (filemode, content)} read with a fresh pygit2 handle."""
    import pygit2

    def read(commit: str) -> dict[bytes, tuple[int, bytes]]:
        repo = pygit2.Repository(str(store_dir))
        return flatten_tree(repo, repo[commit].peel(pygit2.Commit).tree)

    return read


@pytest.fixture(scope="session")
def damage_templates(tmp_path_factory: pytest.TempPathFactory):
    """The damage tests' template stores (tests/damage/damages.py), made once a run."""
    from damages import make_templates  # tests/damage is on sys.path: its tests asked

    return make_templates(tmp_path_factory.mktemp("damage-templates"))


# -- FUSE mounts ------------------------------------------------------------------------------


DEADLINE = 15.0  # seconds a mount test waits for something to happen
FUSE_PROBE = """
import sys
try:
    import pyfuse3
except Exception as exc:  # a broken install, not a kernel without FUSE
    print(f"cannot import pyfuse3: {exc!r}", file=sys.stderr)
    sys.exit(2)
try:
    pyfuse3.init(pyfuse3.Operations(), sys.argv[1], {"ro", "fsname=probe"})
except RuntimeError as exc:  # fusermount3 or the kernel refused (libfuse said why above)
    print(f"mount refused: {exc}", file=sys.stderr)
    sys.exit(3)
pyfuse3.close(unmount=True)
"""


def force_unmount(path: Path) -> None:
    if shutil.which("fusermount3"):
        subprocess.run(["fusermount3", "-u", "-z", str(path)], capture_output=True, timeout=30)


def no_fuse_here(reason: str) -> None:
    """Skip (saying why) because this machine cannot mount FUSE; on CI that is a failure."""
    print(f"FUSE unusable: {reason}")
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must be able to mount FUSE: {reason}")
    pytest.skip(f"cannot mount FUSE here: {reason}")


@pytest.fixture(scope="session")
def fuse_usable(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The one FUSE probe: a real mount with the pyfuse3 rewindfs runs on. Skips only
    when the machine refuses a mount (no fusermount3, no /dev/fuse, the kernel or
    fusermount3 says no), never on CI; anything else (pyfuse3 not importable, a probe
    that crashes) fails every FUSE test instead of hiding them."""
    if shutil.which("fusermount3") is None:
        no_fuse_here("fusermount3 not installed (apt-get install fuse3)")
    if not os.path.exists("/dev/fuse"):
        no_fuse_here("/dev/fuse missing (no FUSE in this kernel or container)")
    probe = tmp_path_factory.mktemp("fuse-probe")
    try:
        proc = subprocess.run([sys.executable, "-c", FUSE_PROBE, str(probe)],
                              capture_output=True, text=True, timeout=60)
    finally:
        force_unmount(probe)
    said = " / ".join(proc.stderr.strip().splitlines()) or "no message"
    if proc.returncode == 3:
        no_fuse_here(said)
    assert proc.returncode == 0, f"the FUSE probe failed (exit {proc.returncode}): {said}"


BIG_FILES, BIG_SIZE = 100, 4 << 20


@pytest.fixture(scope="session")
def big_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A HERMES_HOME whose one checkpoint of `proj` holds BIG_FILES files big{i}.bin of
    BIG_SIZE bytes (distinct blobs, each a random 16 KiB repeated: quick to store), for the
    memory tests, which only mount it and read. Made once per run by the first worker that
    asks (the others wait on its lock) and copied for each worker; the files are deleted
    once stored, so their 400 MiB never reach the disk."""
    from rewindfs.store import Layout, Store, take

    made = shared_dir(tmp_path_factory) / "big-checkpoint"
    with open(f"{made}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (made / "done").exists():
            shutil.rmtree(made, ignore_errors=True)
            project = made / "proj"
            project.mkdir(parents=True)
            for i in range(BIG_FILES):
                (project / f"big{i}.bin").write_bytes(
                    os.urandom(16 << 10) * (BIG_SIZE // (16 << 10)))
            take(Store(Layout(made / "hermes-home" / "checkpoints")), project, "big")
            for stored in project.iterdir():
                stored.unlink()
            (made / "done").touch()
    home = tmp_path_factory.mktemp("big-checkpoint") / "hermes-home"

    def link_objects(source: str, target: str) -> None:
        # git never changes an object or pack file once written (its 112 MB pack is
        # linked, not copied); the rest is this worker's own
        if f"{os.sep}objects{os.sep}" in source:
            os.link(source, target)
        else:
            shutil.copy2(source, target)

    shutil.copytree(made / "hermes-home", home, symlinks=True, copy_function=link_objects)
    return home


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's own temporary directory, which every xdist worker shares (each worker's
    basetemp is a folder of it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture
def mnt(fuse_usable, tmp_path: Path) -> Iterator[Path]:
    """A mountpoint that is always unmounted afterwards, whatever the test did."""
    path = tmp_path / "mnt"
    yield path
    force_unmount(path)


@pytest.fixture
def agent_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recordings]:
    """`agent_session("kilo")`: a fresh copy of the session the real agent recorded once for
    the whole run (tests/agentsim/recorded.py; mark the test with its ON_WORKER group)."""
    from agentsim.recorded import Recordings  # not at the top: it imports make_git_repo

    sessions = Recordings(shared_dir(tmp_path_factory))
    yield sessions
    sessions.close()


def settle(project: Path) -> None:
    """Date everything in `project` long ago, then wait until even the ctimes that dating
    moved to now are older than the stamp's racy window: a capture starting after this
    leaves a stamp however fast the machine starts the hook."""
    for path in project.rglob("*"):
        os.utime(path, (1, 1), follow_symlinks=False)
    os.utime(project, (1, 1))
    from rewindfs.store.history.stamp import RACY_NS

    newest = max(p.lstat().st_ctime_ns for p in [project, *project.rglob("*")])
    wait_for(lambda: time.time_ns() > newest + RACY_NS, "the racy window to pass")


def wait_for(predicate: Callable[[], bool], what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def mount(mnt: Path, run_rewind) -> Callable[..., Path]:
    """mount(*flags): `rewind mount MNT` (daemonised); a failing mount fails the test."""
    def start(*extra: str) -> Path:
        proc = run_rewind("mount", str(mnt), *extra, check=True)
        assert proc.stdout.strip() == str(mnt.resolve())
        assert os.path.ismount(mnt)
        return mnt

    return start


@pytest.fixture(autouse=True)
def no_helper_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """No agent-hook helper (rewindfs.hooks.helper) of this test's home outlives it: the
    hooks start one."""
    if "home" not in request.fixturenames:
        yield
        return
    home = request.getfixturevalue("home")
    yield
    stop_hooks_helper(home)


def stop_hooks_helper(home: Path) -> None:
    """Stop the agent-hook helpers serving the Hermes home `home`: the one that runs, and
    one a hook or `rewind checkpoint` has just started, which takes the helper's lock
    only once its imports are done (`helper.stop` alone missed it, and it idled on for
    ten minutes after the suite)."""
    from rewindfs.hooks import helper

    helper.stop(home / "rewind-hooks")
    ours = f"HERMES_HOME={home}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if (b"rewindfs.resident" in Path(entry.path, "cmdline").read_bytes()
                    and ours in Path(entry.path, "environ").read_bytes().split(b"\0")):
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:  # gone meanwhile
            pass


class Foreground:
    """`rewind mount --foreground` as a child of the test (its pid to measure or signal,
    its log in a file: a pipe nobody reads would stall a chatty mount); forked from
    `server` (tests/forkrun.py) where a fork starts as an exec would."""

    def __init__(self, mnt: Path, env: dict[str, str], flags: tuple[str, ...], log: Path,
                 server: forkrun.Server | None = None):
        self.mnt = mnt
        self.log = log
        args = ["mount", "--foreground", str(mnt), *flags]
        forked: forkrun.Spawned | None = None
        with open(log, "wb") as out, open(os.devnull, "r+b") as null:
            if server is not None and server.usable(env, None):
                try:
                    forked = server.spawn(args, None, env, [null, null, out])
                except forkrun.Unavailable as exc:
                    print(f"forkrun: the mount server failed ({exc}); exec'ing the mount")
            self.proc = forked or subprocess.Popen([REWIND, *args], env=env, stdin=null,
                                                   stdout=null, stderr=out)
        wait_for(lambda: os.path.ismount(mnt) or self.proc.poll() is not None, "the mount")
        assert self.proc.poll() is None, f"the mount exited: {self.output()}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        """SIGTERM: the mount unmounts itself and exits 0 (asserted)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=DEADLINE)
        assert code == 0, f"the mount exited {code}: {self.output()}"
        assert not os.path.ismount(self.mnt)
        return code


@pytest.fixture
def foreground(mnt: Path, child_env, tmp_path: Path,
               request: pytest.FixtureRequest) -> Iterator[Callable[..., Foreground]]:
    """foreground(*flags, env={...}, forked=False): the one launcher of a foreground
    mount at `mnt`; every one started is stopped (killed if it must be) at teardown.
    forked=True forks it from the mount server (tests/forkrun.py): for tests whose
    subject is what the mount answers, not its start-up, memory or process."""
    started: list[Foreground] = []

    def start(*flags: str, env: dict[str, str] | None = None,
              at: Path | None = None, forked: bool = False) -> Foreground:
        where = at or mnt
        log = tmp_path / f"mount-{len(started)}.log"
        server = request.getfixturevalue("mount_server") if forked else None
        started.append(Foreground(where, child_env(**(env or {})), flags, log, server))
        return started[-1]

    yield start
    for one in started:
        if one.proc.poll() is None:
            one.proc.send_signal(signal.SIGTERM)
            try:
                one.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                one.proc.kill()
                one.proc.wait()
        force_unmount(one.mnt)
