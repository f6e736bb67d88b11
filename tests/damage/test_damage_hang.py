"""Nothing waits forever on a damaged store (issue 10).

A truncated loose object makes the libgit2 in PyPI's pygit2 wheels spin forever
(libgit2 issue 7342), holding the GIL. Three layers keep rewindfs from hanging, each
tested here on real stores, real CLI processes and a real mount:

* the patched libgit2 that scripts/setup builds fails at once;
* with a stock pygit2 (the PyPI wheel, run from the cache scripts/build_pygit2 fills),
  rewindfs reads loose objects itself and names the damaged file;
* and if anything still spins, the CLI's watchdog ends the command: one line, exit 3.

Every subprocess has a timeout: without the fix under test, the case hangs and the
timeout fails it. No timing assertions.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from conftest import REWIND, isolated_git_env
from pygit2.errors import check_error
from pygit2.ffi import C, ffi

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60
DEADLINE = 20.0


@pytest.fixture(scope="session")
def stock_pygit2() -> Path:
    """A directory holding PyPI's pygit2 wheel unpacked (put first on PYTHONPATH).

    scripts/setup unpacks it into the cache (scripts/build_pygit2 --stock), so this only
    finds it there; a cache without it is a setup failure, never a skip."""
    proc = subprocess.run([str(ROOT / "scripts" / "build_pygit2"), "--stock"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, f"the stock pygit2 wheel is missing (run scripts/setup): " \
                                 f"{proc.stderr.strip()}"
    return Path(proc.stdout.strip())


def stock_env(stock: Path, **extra: str) -> dict[str, str]:
    return {"PYTHONPATH": str(stock), **extra}


def write_loose(git_dir: Path, data: bytes, kind: str = "blob") -> str:
    proc = subprocess.run(["git", "hash-object", "-w", "-t", kind, "--stdin"], input=data,
                          env=isolated_git_env(GIT_DIR=str(git_dir)), capture_output=True,
                          check=True, timeout=30)
    return proc.stdout.decode().strip()


def truncate(path: Path, size: int | None = None) -> None:
    data = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(data[: len(data) // 2 if size is None else size])


def loose(store: Path, oid: str) -> Path:
    return store / "objects" / oid[:2] / oid[2:]


def tip(store: Path, project: Path) -> str:
    from rewindfs.store import project_hash

    return (store / "refs" / "hermes" / project_hash(project)).read_text().strip()


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rewind: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


# -- the patched libgit2 ----------------------------------------------------------------


def skip_on_stock_pygit2() -> None:
    """Skip, saying why, where setup was told to keep PyPI's pygit2 (without the fixes)."""
    if "+rewindfs." not in pygit2.__version__ and os.environ.get("REWIND_STOCK_PYGIT2") == "1":
        print("REWIND_STOCK_PYGIT2=1: this venv has the stock pygit2, without the fix")
        pytest.skip("REWIND_STOCK_PYGIT2=1: stock pygit2 installed on purpose")


def test_patched_libgit2_refuses_an_index_counting_more_entries_than_it_holds(tmp_path):
    """The libgit2 this venv's pygit2 carries refuses an index header whose entry count
    the file cannot hold, before sizing anything by it (stock: reserves 32.5 GiB for this
    one, then fails on its first entry; patches/libgit2/README.md, 0004)."""
    skip_on_stock_pygit2()
    index = tmp_path / "index"
    index.write_bytes(b"DIRC\0\0\0\2garbage" * 10)  # counts 0x67617262 entries
    opened = ffi.new("git_index **")  # (pygit2.Index, when its open fails, warns on __del__)
    with pytest.raises(pygit2.GitError, match="more entries than the index holds"):
        check_error(C.git_index_open(opened, os.fsencode(index)))


def test_patched_libgit2_fails_fast_on_truncated_loose_objects(tmp_path):
    """The libgit2 this venv's pygit2 carries reports a truncated object (stock: spins)."""
    skip_on_stock_pygit2()
    repo = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True,
                   env=isolated_git_env())
    blob = write_loose(repo, b"some file content\n" * 200)
    tree = write_loose(repo, b"100644 a.txt\0" + bytes.fromhex(blob), "tree")
    commit = write_loose(repo, f"tree {tree}\nauthor a <a@a> 1 +0000\ncommitter a <a@a> 1 "
                               f"+0000\n\nmessage\n".encode(), "commit")
    for oid in (blob, tree, commit):
        truncate(loose(repo, oid))
    code = (
        "import sys, pygit2\n"
        "repo = pygit2.Repository(sys.argv[1])\n"
        "for oid in sys.argv[2:]:\n"
        "    try:\n"
        "        repo[oid].read_raw()\n"
        "        print('read', oid)\n"
        "    except pygit2.GitError as exc:\n"
        "        print('error', exc)\n"
        "    try:\n"
        "        repo.odb.read(oid)\n"
        "        print('read', oid)\n"
        "    except pygit2.GitError as exc:\n"
        "        print('error', exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(repo), blob, tree, commit],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    outcomes = proc.stdout.splitlines()
    assert len(outcomes) == 6
    # upstream's words (libgit2 PR 7346), at once: the stock libgit2 spins here
    assert all("premature end of zlib stream" in line for line in outcomes), proc.stdout


# -- the CLI, with the stock pygit2 -----------------------------------------------------


@pytest.mark.parametrize("what", ["commit", "tree", "blob"])
def test_stock_pygit2_cli_names_the_truncated_object(what, store, project, store_dir,
                                                     run_rewind, stock_pygit2):
    run_rewind("checkpoint", project, "-m", "one", check=True)
    (project / "README.md").write_text("changed\n")
    run_rewind("checkpoint", project, "-m", "two", check=True)
    (project / "README.md").write_text("edited since\n")  # restoring 1 needs its README.md
    commit = tip(store_dir, project)
    oid = {"commit": commit,
           "tree": str(pygit2.Repository(str(store_dir))[commit].tree_id),
           "blob": str(pygit2.Repository(str(store_dir))[commit].tree["README.md"].id)}[what]
    truncate(loose(store_dir, oid))
    env = stock_env(stock_pygit2)
    status = run_rewind("status", env=env, timeout=TIMEOUT)
    assert "stock libgit2" in status.stdout and "fallback" in status.stdout
    # the newest checkpoint's commit, tree or README.md: restoring it reads them all
    proc = run_rewind("restore", commit, "-C", project, "--yes", env=env, timeout=TIMEOUT)
    assert proc.returncode in (1, 3), proc.stderr  # 1: an incomplete restore, named
    text = proc.stdout + proc.stderr
    assert f"objects/{oid[:2]}/{oid[2:]}" in text and "truncated" in text
    assert "Traceback" not in proc.stderr
    if what != "blob":
        assert "store damaged" in one_line(proc)


def test_stock_pygit2_agent_checkpoint_returns(store, project, store_dir, run_rewind,
                                               stock_pygit2, home, child_env):
    """ensure_checkpoint never raises and never hangs, with the stock libgit2 too."""
    run_rewind("checkpoint", project, check=True)
    truncate(loose(store_dir, tip(store_dir, project)))
    (project / "README.md").write_text("changed\n")
    code = ("import sys\n"
            "from rewindfs import CheckpointManager\n"
            "mgr = CheckpointManager(enabled=True, base=sys.argv[1])\n"
            "mgr.new_turn()\n"
            "print('returned', mgr.ensure_checkpoint(sys.argv[2], 'before patch'))\n")
    for env in ({}, stock_env(stock_pygit2)):
        proc = subprocess.run([sys.executable, "-c", code, str(home / "checkpoints"),
                               str(project)], capture_output=True, text=True, timeout=TIMEOUT,
                              env=child_env(**env))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() in ("returned True", "returned False")


# -- the watchdog ---------------------------------------------------------------------------


def _stuck_store(run_rewind, project: Path, store_dir: Path) -> None:
    run_rewind("checkpoint", project, check=True)
    truncate(loose(store_dir, tip(store_dir, project)))


def test_watchdog_ends_a_command_stuck_in_libgit2(store, project, store_dir, run_rewind,
                                                  stock_pygit2):
    """Stock libgit2 with the fallback switched off really spins: the watchdog ends it."""
    _stuck_store(run_rewind, project, store_dir)
    env = stock_env(stock_pygit2, REWIND_LOOSE_GUARD="off", REWIND_STALL_SECONDS="2")
    proc = run_rewind("list", project, env=env, timeout=TIMEOUT)
    assert proc.returncode == 3
    assert "no progress" in one_line(proc)


@pytest.mark.long
def test_ctrl_c_ends_a_command_stuck_in_libgit2(store, project, store_dir, child_env, run_rewind,
                                                stock_pygit2):
    _stuck_store(run_rewind, project, store_dir)
    env = child_env(REWIND_LOOSE_GUARD="off", PYTHONPATH=str(stock_pygit2))
    # Its own process group, as a shell gives a foreground job: Ctrl-C goes to the group.
    proc = subprocess.Popen([REWIND, "list", str(project)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_until_stuck(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode in (3, 130), err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err


def _wait_until_stuck(pid: int) -> None:
    """Until the command spins in libgit2: its watchdog helper is up (so it is past its
    imports) and its main thread has used a second of CPU without finishing."""
    end = time.monotonic() + TIMEOUT

    def cpu_seconds() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def has_child() -> bool:
        return any(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1]
                   == str(pid) for p in os.listdir("/proc") if p.isdigit()
                   and Path(f"/proc/{p}/stat").exists())

    while time.monotonic() < end:
        try:
            if has_child() and cpu_seconds() > 2.0:
                return
        except (OSError, IndexError):
            pass
        time.sleep(0.1)
    raise AssertionError("the command never got stuck")


# -- the mount --------------------------------------------------------------------------


@pytest.mark.parametrize("libgit2", ["patched", "stock"])
def test_truncated_commit_never_freezes_the_mount(libgit2, store, project, store_dir,
                                                  foreground, run_rewind, request):
    env = stock_env(request.getfixturevalue("stock_pygit2")) if libgit2 == "stock" else {}
    run_rewind("checkpoint", project, "-m", "one", check=True)
    (project / "README.md").write_text("changed\n")
    run_rewind("checkpoint", project, "-m", "two", check=True)
    truncate(loose(store_dir, tip(store_dir, project)))
    mounted = foreground(env=env, forked=True)  # stock: exec'd (PYTHONPATH)
    # Each `ls` ends (with an error for what cannot be read); none is stuck in D state.
    for args in (["ls", str(mounted.mnt)], ["ls", "-R", str(mounted.mnt)]):
        done = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
        assert "Transport endpoint" not in done.stderr, done.stderr
    mounted.stop()  # SIGTERM unmounts: nothing hangs


@pytest.mark.parametrize("libgit2", ["patched", "stock"])
@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_mount_answers_eio_for_the_damaged_file_only(libgit2, damage, store, project,
                                                     store_dir, foreground, run_rewind,
                                                     request):
    env = stock_env(request.getfixturevalue("stock_pygit2")) if libgit2 == "stock" else {}
    (project / "docs" / "notes.txt").write_text("only in the second checkpoint\n" * 100)
    run_rewind("checkpoint", project, "-m", "one", check=True)
    commit = tip(store_dir, project)
    blob = str(pygit2.Repository(str(store_dir))[commit].tree["docs/notes.txt"].id)
    if damage == "truncated":
        truncate(loose(store_dir, blob))
    else:
        loose(store_dir, blob).unlink()
    mounted = foreground(env=env, forked=True)  # stock: exec'd (PYTHONPATH)
    docs = mounted.mnt / "proj" / "1" / "docs"
    assert sorted(os.listdir(docs)) == ["guide.txt", "notes.txt"]
    assert (docs / "guide.txt").read_text() == "line 1\nline 2\nline 3\n"
    with pytest.raises(OSError) as failed:
        (docs / "notes.txt").read_bytes()
    assert failed.value.errno == errno.EIO
    assert (mounted.mnt / "proj" / "1" / "README.md").exists()
    mounted.stop()
