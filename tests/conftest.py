"""Shared fixtures: a fresh Hermes home, a sample project, and runners for the real
`rewind` CLI and the git CLI pointed at the store.

Everything works on real git stores in tmp dirs; nothing here mocks git.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REWIND = shutil.which("rewind", path=os.path.dirname(sys.executable))
DAY = 86400

# pytest-xdist's workers (scripts/test) start with COLUMNS=80 in their environment, which
# every `rewind` a test starts would take as the width to lay its tables out for.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

# git run against the store must not see the user's or the system's config.
GIT_ISOLATION = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
                 "GIT_CONFIG_SYSTEM": "/dev/null"}


def isolated_git_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ISOLATION)
    env.update(extra)
    return env


def age(layout, workdir: Path, days: float) -> None:
    """Pretend the project was last touched `days` ago (as Hermes would have written it)."""
    from rewindfs.store import project_hash

    path = layout.project_record(project_hash(workdir))
    data = json.loads(path.read_text())
    data["last_touch"] = time.time() - days * DAY
    path.write_text(json.dumps(data))


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
def store(home: Path):
    """A rewindfs Store object on the test home (created lazily by the first checkpoint)."""
    from rewindfs.store import Layout, Store

    return Store(Layout(home / "checkpoints"))


@pytest.fixture
def run_rewind(home: Path, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Run the installed `rewind` console script as a subprocess with HERMES_HOME set.

    HOME points at an empty tmp dir so the caller's own ~/.gitconfig and
    ~/.hermes never leak in; pass env= to add or override variables.
    """
    if REWIND is None:
        pytest.fail("the `rewind` console script is not installed next to the interpreter")
    fake_home = tmp_path / "user-home"
    fake_home.mkdir(exist_ok=True)

    def run(*args: str, cwd: str | os.PathLike[str] | None = None,
            env: dict[str, str] | None = None, timeout: float = 30,
            check: bool = False) -> subprocess.CompletedProcess:
        full_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("GIT_", "REWIND_"))}
        full_env.update(HERMES_HOME=str(home), HOME=str(fake_home), LC_ALL="C.UTF-8")
        full_env.update(env or {})
        proc = subprocess.run(
            [REWIND, *map(str, args)], cwd=cwd, env=full_env, capture_output=True,
            text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"rewind {' '.join(map(str, args))} exited {proc.returncode}\n"
                f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    return run


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


# -- FUSE mounts (tests/fs/) ------------------------------------------------------------------


def force_unmount(path: Path) -> None:
    if shutil.which("fusermount3"):
        subprocess.run(["fusermount3", "-u", "-z", str(path)], capture_output=True)


@pytest.fixture(scope="session")
def fuse_usable(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Skip unless a FUSE filesystem can really be mounted here (tried, not guessed)."""
    if shutil.which("fusermount3") is None:
        pytest.skip("fusermount3 not installed (apt-get install fuse3)")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse missing (no FUSE in this kernel or container)")
    probe = tmp_path_factory.mktemp("fuse-probe")
    code = ("import sys, pyfuse3\n"
            "pyfuse3.init(pyfuse3.Operations(), sys.argv[1], {'ro', 'fsname=probe'})\n"
            "pyfuse3.close(unmount=True)\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(probe)], capture_output=True,
                              text=True, timeout=30)
    finally:
        force_unmount(probe)
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        print(f"FUSE unusable: {reason}")
        pytest.skip(f"cannot mount FUSE here: {reason}")


@pytest.fixture
def mnt(fuse_usable, tmp_path: Path, run_rewind) -> Iterator[Path]:
    """A mountpoint that is always unmounted afterwards, whatever the test did."""
    path = tmp_path / "mnt"
    yield path
    force_unmount(path)


DEADLINE = 15.0  # seconds a mount test waits for something to happen


def wait_for(predicate: Callable[[], bool], what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def mount(mnt: Path, run_rewind) -> Callable[..., Path]:
    def start(*extra: str) -> Path:
        proc = run_rewind("mount", str(mnt), *extra, check=True)
        assert proc.stdout.strip() == str(mnt.resolve())
        assert os.path.ismount(mnt)
        return mnt

    return start


@pytest.fixture
def no_helper_left(home: Path) -> Iterator[None]:
    """No agent-hook helper (rewindfs.hooks.helper) of this test's home outlives it."""
    from rewindfs.hooks import helper

    yield
    pid = helper.running(home / "rewind-hooks")   # only a live holder of its lock counts
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
