"""Concurrent checkpoints: threads and processes on one and several projects never lose a
commit, and a writer killed while holding the project lock blocks nobody."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pygit2
import pytest
from conftest import rewind_env

from rewindfs.store import Layout, Store, project_hash, take


def history_ids(store_dir: Path, workdir: Path) -> list[str]:
    repo = pygit2.Repository(str(store_dir))
    ref = repo.references.get(f"refs/hermes/{project_hash(workdir)}")
    out = []
    commit = ref.peel(pygit2.Commit) if ref is not None else None
    while commit is not None:
        out.append(str(commit.id))
        commit = commit.parents[0] if commit.parent_ids else None
    return out


def tip_paths(store_dir: Path, workdir: Path) -> set[str]:
    repo = pygit2.Repository(str(store_dir))
    tree = repo.references[f"refs/hermes/{project_hash(workdir)}"].peel(pygit2.Commit).tree
    out = set()

    def walk(t, prefix):
        for e in t:
            if e.type_str == "tree":
                walk(repo[e.id], prefix + e.name + "/")
            else:
                out.add(prefix + e.name)

    walk(tree, "")
    return out


def write_atomically(path: Path, text: str) -> None:
    """Write via rename so a concurrent capture never sees a half-written file.

    Captures racing with in-place writes are covered on their own (the rewrite-race
    tests below); here the subject is lost commits, so the writes are atomic.
    """
    tmp = path.parent.parent / f".{path.name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


def run_threads(n_threads, per_thread, target):
    errors: list[BaseException] = []
    barrier = threading.Barrier(n_threads)

    def body(t):
        try:
            barrier.wait()
            for i in range(per_thread):
                target(t, i)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "a checkpoint thread hung"
    assert not errors, errors


def test_threads_shared_store_object(store, project, store_dir, fsck):
    taken: list[str] = []
    lock = threading.Lock()

    def one(t, i):
        write_atomically(project / f"t{t}-{i}.txt", f"{t} {i}\n")
        result = take(store, project, f"thread {t} step {i}")
        if result.taken:
            with lock:
                taken.append(result.commit)

    run_threads(8, 5, one)
    history = history_ids(store_dir, project)
    assert taken, "no checkpoint reported taken"
    assert set(taken) <= set(history), "a checkpoint reported taken is missing from history"
    assert len(history) == len(set(history)) == len(taken)
    paths = tip_paths(store_dir, project)
    assert {f"t{t}-{i}.txt" for t in range(8) for i in range(5)} <= paths
    fsck()


def test_threads_separate_store_objects(home, project, store_dir, fsck):
    """Each thread opens the store itself: only the file lock serialises them."""
    taken: list[str] = []
    lock = threading.Lock()
    stores = [Store(Layout(home / "checkpoints")) for _ in range(8)]

    def one(t, i):
        write_atomically(project / f"s{t}-{i}.txt", f"{t} {i}\n")
        result = take(stores[t], project, f"thread {t} step {i}")
        if result.taken:
            with lock:
                taken.append(result.commit)

    run_threads(8, 5, one)
    history = history_ids(store_dir, project)
    assert set(taken) <= set(history)
    assert len(history) == len(taken)
    assert {f"s{t}-{i}.txt" for t in range(8) for i in range(5)} <= tip_paths(store_dir, project)
    fsck()


WORKER = r"""
import json, sys
from pathlib import Path
from rewindfs.store import Layout, Store, take
base, workdir, tag, count = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
store = Store(Layout(base))
sys.stdin.readline()  # start together
out = []
for i in range(count):
    tmp = workdir.parent / f".{tag}-{i}.tmp"  # atomic: see write_atomically
    tmp.write_text(f"{tag} {i}\n")
    tmp.replace(workdir / f"{tag}-{i}.txt")
    r = take(store, workdir, f"{tag} step {i}")
    out.append({"taken": r.taken, "commit": r.commit})
print(json.dumps(out))
"""


def test_processes_same_and_different_projects(home, tmp_path, store_dir, fsck, run_rewind):
    a, b = tmp_path / "proj-a", tmp_path / "proj-b"
    for p in (a, b):
        p.mkdir()
        (p / "base.txt").write_text("base\n")
    plan = [(a, "p0"), (a, "p1"), (b, "p2"), (b, "p3")]
    env = rewind_env(home, home.parent / "user-home")
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(home / "checkpoints"), str(wd), tag,
                          "5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
        for wd, tag in plan
    ]
    # a CLI writer on project a at the same time
    (a / "cli.txt").write_text("cli\n")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    cli = run_rewind("checkpoint", a, "-m", "from the cli", "--json")
    results = {}
    for (_wd, tag), p in zip(plan, procs, strict=True):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results[tag] = json.loads(out)
    assert cli.returncode == 0, cli.stderr
    cli_data = json.loads(cli.stdout)

    for wd, tags in ((a, ["p0", "p1"]), (b, ["p2", "p3"])):
        history = history_ids(store_dir, wd)
        taken = [r["commit"] for t in tags for r in results[t] if r["taken"]]
        if wd == a and cli_data["taken"]:
            taken.append(cli_data["hash"])
        assert set(taken) <= set(history), f"lost commits in {wd.name}"
        assert len(history) == len(set(taken))
        expected = {f"{t}-{i}.txt" for t in tags for i in range(5)} | {"base.txt"}
        if wd == a:
            expected.add("cli.txt")
        assert expected <= tip_paths(store_dir, wd)
    fsck()


HOLDER = r"""
import sys, time
from pathlib import Path
from rewindfs.store import Layout, Store
from rewindfs.store.history.snapshot import locked
store = Store(Layout(Path(sys.argv[1])))
with locked(store, sys.argv[2]) as project:
    admin = store.layout.worktree_admin(project.h16)
    # what a writer killed mid-capture leaves behind: a half-written index lock file
    (admin / "index.lock").write_bytes(b"DIRC partial")
    print("locked", flush=True)
    time.sleep(60)
"""


def test_sigkilled_lock_holder_does_not_block(home, store, project, store_dir, fsck):
    first = take(store, project, "before the crash")
    assert first.taken
    env = rewind_env(home, home.parent / "user-home")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home / "checkpoints"),
                               str(project)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "locked", holder.stderr.read()
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    (project / "after.txt").write_text("after the crash\n")
    outcome: dict = {}

    def attempt():
        try:
            outcome["result"] = take(Store(Layout(home / "checkpoints")), project, "after")
        except BaseException as exc:  # noqa: BLE001
            outcome["error"] = exc

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(timeout=20)
    assert not t.is_alive(), "checkpoint blocked by the killed process's lock"
    assert "error" not in outcome, outcome.get("error")
    result = outcome["result"]
    assert result.taken
    assert history_ids(store_dir, project)[:2] == [result.commit, first.commit]
    assert "after.txt" in tip_paths(store_dir, project)
    fsck()


def test_sigkilled_checkpoint_process_mid_run(home, project, store_dir, fsck, store):
    """Kill real checkpoint processes at arbitrary moments of a capture; the store stays
    usable. (The store and project exist first: kills inside store creation are covered
    by the stale-lock tests below.)"""
    assert take(store, project, "registered").taken
    for i in range(300):
        (project / "bulk" / f"{i // 50}").mkdir(parents=True, exist_ok=True)
        (project / "bulk" / f"{i // 50}" / f"f{i}.txt").write_text(f"{i}\n" * 20)
    env = rewind_env(home, home.parent / "user-home")
    script = ("import sys; from pathlib import Path; from rewindfs.store import Layout, Store, "
              "take\nprint('go', flush=True)\n"
              "take(Store(Layout(Path(sys.argv[1]))), sys.argv[2], 'doomed')")
    for delay in (0.0, 0.02, 0.05, 0.1):
        proc = subprocess.Popen([sys.executable, "-c", script, str(home / "checkpoints"),
                                 str(project)], stdout=subprocess.PIPE, env=env, text=True)
        proc.stdout.readline()
        threading.Event().wait(delay)
        proc.kill()
        proc.wait()
        (project / "bulk" / f"after-{delay}.txt").write_text("x\n")
    result = take(store, project, "survivor")
    assert result.commit is not None
    paths = tip_paths(store_dir, project)
    assert {f"bulk/after-{d}.txt" for d in (0.0, 0.02, 0.05, 0.1)} <= paths
    assert "bulk/5/f299.txt" in paths
    fsck()


STALL_ADMIN_RENAME = r"""
import pathlib, sys, time
from rewindfs.store import Layout, Store, take
real_rename = pathlib.Path.rename
def stalled_rename(self, target):
    if "worktrees" in str(target):
        print("stalled", flush=True)
        time.sleep(60)  # killed here: the admin dir is fully written but not yet in place
    return real_rename(self, target)
pathlib.Path.rename = stalled_rename
take(Store(Layout(pathlib.Path(sys.argv[1]))), sys.argv[2], "never finishes")
print("finished", flush=True)
"""


def test_killed_while_registering_project_leaves_store_clean(home, store, project, tmp_path,
                                                             store_dir, fsck):
    """A process killed while creating a project's admin dir must leave nothing git
    (fsck, gc, worktree prune) or the next checkpoint trips over."""
    other = tmp_path / "warm"
    other.mkdir()
    (other / "w.txt").write_text("w\n")
    take(store, other, "store exists")
    env = rewind_env(home, home.parent / "user-home")
    proc = subprocess.Popen([sys.executable, "-c", STALL_ADMIN_RENAME, str(home / "checkpoints"),
                             str(project)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        line = proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()
    # killed where it stalled: between writing the admin dir and moving it into place
    assert line == "stalled", f"the scenario never happened: {line!r} {proc.stderr.read()}"
    fsck()
    result = take(Store(Layout(home / "checkpoints")), project, "after the crash")
    assert result.taken
    fsck()


def test_stale_store_config_lock_does_not_break_new_projects(home, store, project, tmp_path,
                                                            store_dir, run_rewind):
    """A writer killed inside Store.ensure() (which holds the store lock) leaves
    `config.lock` behind; new projects must still be checkpointable afterwards."""
    take(store, project, "store exists")
    # What a process killed in the middle of `config[key] = value` leaves: a config
    # that is not fully ours yet, and the libgit2 lock file.
    (store_dir / "config").write_text(
        (store_dir / "config").read_text().replace("gpgsign = false", "gpgsign = true", 1)
    )
    (store_dir / "config.lock").write_text("[core]\n")
    fresh = tmp_path / "fresh-project"
    fresh.mkdir()
    (fresh / "a.txt").write_text("a\n")
    proc = run_rewind("checkpoint", fresh, "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["taken"] is True


REWRITER = r"""
import json, sys, threading, time
from pathlib import Path
from rewindfs.store import Layout, Store, take
base, p, seconds = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
store = Store(Layout(base))
for k in range(4):
    (p / f"busy{k}.txt").write_text("x" * 100_000)
take(store, p, "first")
stop = threading.Event()
def writer():  # another process of the agent (a build, a formatter) rewriting files
    i = 0
    while not stop.is_set():
        (p / f"busy{i % 4}.txt").write_text("x" * (50_000 + (i * 7919) % 100_000))
        i += 1
threading.Thread(target=writer, daemon=True).start()
errors, n, deadline = [], 0, time.monotonic() + seconds
while time.monotonic() < deadline:
    try:
        take(store, p, f"c{n}")
    except Exception as exc:
        errors.append(repr(exc))
    n += 1
stop.set()
print(json.dumps({"takes": n, "errors": errors[:3], "n_errors": len(errors)}), flush=True)
"""


@pytest.fixture(scope="module")
def rewrite_race(tmp_path_factory):
    """Checkpoints taken for 2 s while another thread keeps rewriting tracked files
    (in a child process, so a crash cannot take the test run down)."""
    top = tmp_path_factory.mktemp("rewrite-race")
    (top / "p").mkdir()
    env = rewind_env(None, top / "user-home")
    proc = subprocess.run([sys.executable, "-c", REWRITER, str(top / "h"), str(top / "p"), "2"],
                          capture_output=True, text=True, env=env, timeout=120)
    return proc


def test_file_rewritten_during_capture_does_not_crash_process(rewrite_race):
    rc = rewrite_race.returncode
    assert rc == 0, (
        f"checkpoint process died with {signal.Signals(-rc).name if rc < 0 else rc}: "
        f"{rewrite_race.stderr[-500:]}"
    )


def test_file_rewritten_during_capture_does_not_fail_checkpoint(rewrite_race):
    if rewrite_race.returncode != 0:
        pytest.fail("the checkpoint process crashed (see the test above)")
    out = json.loads(rewrite_race.stdout)
    assert out["n_errors"] == 0, f"{out['n_errors']} of {out['takes']} failed: {out['errors']}"


def test_stale_head_lock_from_killed_init_does_not_block(home, project, run_rewind, store_dir):
    """A process killed inside the store's `git init` leaves store/HEAD.lock and no HEAD;
    the next checkpoint must still create the store (it holds the store lock)."""
    store_dir.mkdir(parents=True)
    (store_dir / "HEAD.lock").write_text("ref: refs/heads/mas")
    proc = run_rewind("checkpoint", project, "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["taken"] is True


@pytest.mark.parametrize("age", [3600.0, 0.0], ids=["old", "just-left"])
def test_ref_lock_left_by_killed_checkpoint_does_not_block(home, project, run_rewind, store_dir,
                                                           age):
    """SIGKILL between git's lock-file create and rename leaves refs/hermes/<h16>.lock;
    later checkpoints of that project must clear it (old: at once; just left: once it is
    older than any live writer holds one) and go on, not fail with exit 3 forever."""
    assert run_rewind("checkpoint", project).returncode == 0
    h16 = project_hash(str(project))
    lock = store_dir / "refs" / "hermes" / f"{h16}.lock"
    lock.write_text("0" * 40 + "\n")
    if age:
        os.utime(lock, (lock.stat().st_atime - age, lock.stat().st_mtime - age))
    (project / "new.txt").write_text("after the kill\n")
    proc = run_rewind("checkpoint", project, "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["taken"] is True
    assert not lock.exists()
    assert "new.txt" in tip_paths(store_dir, project)


def test_fresh_ref_lock_of_a_live_writer_is_left_alone(store, project, store_dir):
    """A lock file younger than STALE_LOCK_SECONDS may be a live git's (Hermes's): the
    project lock does not remove it."""
    take(store, project, "first")
    h16 = project_hash(str(project))
    lock = store_dir / "refs" / "hermes" / f"{h16}.lock"
    lock.write_text("0" * 40 + "\n")
    store.project(project).clear_stale_ref_locks()
    assert lock.exists()
