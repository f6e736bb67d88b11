"""The store never outgrows its cap (issue 46): after every checkpoint that takes the store
over max_total_size_mb, a detached pruner drops the oldest unpinned checkpoints and frees
their objects at once; a checkpoint larger than the whole cap is refused in one line that
names it; `rewind status` shows the cap, the size and what the last pruning dropped; and
a pruning that runs while a rewindfs checkpoint or a Hermes process writes removes
nothing they are writing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from conftest import REWIND, flatten_tree, flocks, rewind_env, wait_for
from hooks.hookproc import claude_payload, hook_env, log_lines, run_hook
from test_restore_helpers import manager

from rewindfs.store import Layout, Store, checkpoints, project_hash, set_label
from rewindfs.store.capture import splitstore
from rewindfs.store.maintenance import auto, autocap, caprecord
from rewindfs.store.maintenance.objsizes import object_bytes
from rewindfs.store.objects import writers

KB, MiB = 1024, 1024 * 1024
CHUNK = 200 * KB  # one checkpoint's new bytes (random: they do not compress)


def stored(layout: Layout) -> int:
    """What the cap is held against: the bytes of the store's objects."""
    return object_bytes(layout)[0]


def pruners(layout: Layout) -> list[int]:
    """Pids of the detached pruners of this base (autocap's processes) alive now."""
    base = str(layout.base).encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"rewindfs.store.maintenance.autocap" in argv and base in argv and state != "Z":
            found.append(int(entry.name))
    return found


def pruned_since(layout: Layout, moment: float) -> caprecord.CapPrune | None:
    record = caprecord.read(layout)
    return record if record is not None and record.ended >= moment else None


def wait_until_pruned(layout: Layout, moment: float) -> caprecord.CapPrune:
    """Until a pruning that started after `moment` has ended and no pruner runs."""
    wait_for(lambda: pruned_since(layout, moment) is not None and not pruners(layout)
             and not auto.running(layout), "the pruner to finish")
    record = pruned_since(layout, moment)
    assert record is not None
    return record


@pytest.fixture(autouse=True)
def no_pruner_left(home: Path):
    """No pruner started by a test outlives it (its store is about to be deleted)."""
    yield
    layout = Layout(home / "checkpoints")
    try:
        wait_for(lambda: not pruners(layout), "the test's pruners to end", deadline=60)
    finally:
        for pid in pruners(layout):
            os.kill(pid, signal.SIGKILL)


def churn(workdir: Path, i: int, size: int = CHUNK) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "data.bin").write_bytes(os.urandom(size))
    (workdir / "note.txt").write_text(f"step {i}\n")


def chain(layout: Layout, workdir: Path) -> list[str]:
    return [c.id for c in checkpoints(Store(layout).repo, project_hash(workdir))]


def complete(layout: Layout, commit: str) -> dict[bytes, tuple[int, bytes]]:
    """Every file of checkpoint `commit`, read from the store (raises if one is missing)."""
    repo = pygit2.Repository(str(layout.store))
    return flatten_tree(repo, repo[commit].peel(pygit2.Commit).tree)


def blob_of(layout: Layout, commit: str, name: str) -> bytes:
    repo = pygit2.Repository(str(layout.store))
    return repo[repo[commit].peel(pygit2.Commit).tree[name].id].data


# -- the cap holds after every checkpoint -------------------------------------------------

def test_cap_holds_after_every_checkpoint(home, layout, tmp_path, fsck):
    """An agent (the Python API) checkpointing two projects past a 1 MB cap: after each
    checkpoint the store is at most the cap plus that checkpoint; a checkpoint that takes
    it past the share of the cap where pruning starts starts a pruner, after which the
    store is under the cap; the oldest unpinned checkpoints went (across projects, oldest
    first), never a project's newest nor a labelled one; what is kept is whole."""
    mgr = manager(home, max_total_size_mb=1, max_snapshots=100)
    a, b = tmp_path / "a", tmp_path / "b"
    churn(b, 0)
    assert mgr.ensure_checkpoint(str(b))  # b: one old checkpoint, its newest: kept
    labelled = None
    pruned = 0
    for i in range(10):
        churn(a, i)
        mgr.new_turn()
        before = time.time()
        assert mgr.ensure_checkpoint(str(a))
        assert stored(layout) <= MiB + CHUNK + 16 * KB
        if i == 1:
            labelled = chain(layout, a)[0]
            set_label(Store(layout), project_hash(a), "keep-me", labelled)
            labelled_data = (a / "data.bin").read_bytes()
        if stored(layout) > MiB * autocap.TRIGGER:
            record = wait_until_pruned(layout, before)
            pruned += 1
            assert record.by == "after a checkpoint" and record.cap_bytes == MiB
            assert record.left_over is None and stored(layout) <= MiB * autocap.TRIGGER
    assert pruned >= 3  # the scenario: the cap was passed again and again
    kept = chain(layout, a)
    assert labelled in kept and kept[0] == mgr.last_result.commit
    assert chain(layout, b)  # b's newest (its only one) stays, however old
    assert blob_of(layout, labelled, "data.bin") == labelled_data
    assert blob_of(layout, kept[0], "data.bin") == (a / "data.bin").read_bytes()
    for commit in kept:
        complete(layout, commit)
    record = caprecord.read(layout)
    assert record.dropped and all(d.project == project_hash(a) for d in record.dropped)
    assert all("cap" in d.why for d in record.dropped) and "over" in record.why
    fsck()


def test_oldest_first_across_projects(home, layout, tmp_path):
    """The checkpoints that go are the oldest of the whole store, whichever project holds
    them: a quiet project's old history goes before a busy one's recent checkpoints."""
    quiet, busy = tmp_path / "quiet", tmp_path / "busy"
    mgr = manager(home, max_total_size_mb=100, max_snapshots=100)
    for i in range(3):
        churn(quiet, i)
        mgr.new_turn()
        mgr.ensure_checkpoint(str(quiet))
    for i in range(3):
        churn(busy, i)
        mgr.new_turn()
        mgr.ensure_checkpoint(str(busy))
    old = chain(layout, quiet)
    report = autocap.run(layout, 5 * CHUNK)  # ~1.5 MB live over a 1.5 MB-ish cap
    assert report is not None and report.dropped
    gone = [d.commit for d in report.dropped]
    assert gone[:2] == [old[2], old[1]]  # the quiet project's two droppable ones first
    assert old[0] in chain(layout, quiet)  # its newest stays


def test_unlisted_checkpoints_objects_are_freed(home, layout, tmp_path):
    """max_snapshots unlists old checkpoints; their objects count against the cap until
    freed, and the pruner frees them the same way, dropping nothing listed."""
    mgr = manager(home, max_total_size_mb=0, max_snapshots=2)
    wd = tmp_path / "p"
    for i in range(6):
        churn(wd, i)
        mgr.new_turn()
        mgr.ensure_checkpoint(str(wd))
    listed = chain(layout, wd)
    assert len(listed) == 2 and stored(layout) > 5 * CHUNK  # four unlisted, not yet freed
    report = autocap.run(layout, 4 * CHUNK)
    assert report is not None and report.dropped == [] and report.freed_bytes > 3 * CHUNK
    assert chain(layout, wd) == listed and stored(layout) <= 4 * CHUNK


def test_pruning_rewrites_only_the_packs_holding_what_went(home, layout, tmp_path, fsck):
    """Each checkpoint of 1.2 MB went into packs of its own: a pruning removes the packs of
    the checkpoints it dropped and leaves every pack of the kept ones as it is (a repack
    of the whole store each time would cost the store, not what is freed)."""
    mgr = manager(home, max_total_size_mb=0, max_snapshots=100)
    wd = tmp_path / "p"
    pack_dir = layout.store / "objects" / "pack"
    packs_of = []
    for i in range(6):
        before = set(os.listdir(pack_dir)) if pack_dir.exists() else set()
        churn(wd, i, size=1200 * KB)
        mgr.new_turn()
        assert mgr.ensure_checkpoint(str(wd))
        packs_of.append({n for n in os.listdir(pack_dir) if n.endswith(".pack")} - before)
    assert all(packs_of)  # the scenario: every checkpoint wrote packs
    commits = list(reversed(chain(layout, wd)))  # oldest first
    report = autocap.run(layout, 6 * MiB)
    assert report is not None and report.dropped
    gone = {d.commit for d in report.dropped}
    assert gone == set(commits[:len(gone)])  # the oldest
    now = set(os.listdir(pack_dir))
    for commit, packs in zip(commits, packs_of, strict=True):
        if commit in gone:
            assert not packs & now
        else:
            assert packs <= now  # untouched: the very same files
    assert stored(layout) <= 6 * MiB * autocap.TARGET
    fsck()


def test_checkpoint_never_waits_on_a_running_pruning(home, layout, tmp_path):
    """While maintenance holds the base (a pruner or the daily sweep), a checkpoint over
    the cap is taken at once and starts no second pruner; the next one after it does."""
    mgr = manager(home, max_total_size_mb=1, max_snapshots=100)
    wd = tmp_path / "p"
    for i in range(2):
        churn(wd, i)
        mgr.new_turn()
        mgr.ensure_checkpoint(str(wd))
    assert stored(layout) < MiB * autocap.TRIGGER
    with auto.base_locked(layout):
        assert auto.running(layout)
        moment = time.time()
        for i in (2, 3, 4, 5):
            churn(wd, i)
            mgr.new_turn()
            assert mgr.ensure_checkpoint(str(wd))
        assert stored(layout) > MiB
        assert not pruners(layout) and pruned_since(layout, moment) is None
    churn(wd, 6)
    mgr.new_turn()
    assert mgr.ensure_checkpoint(str(wd))
    wait_until_pruned(layout, moment)
    assert stored(layout) <= MiB


# -- a checkpoint larger than the cap ------------------------------------------------------

def test_rewind_checkpoint_refuses_one_larger_than_the_cap(run_rewind, layout, tmp_path):
    wd = tmp_path / "p"
    wd.mkdir()
    (wd / "small.txt").write_text("small\n")
    run_rewind("checkpoint", cwd=wd, env={"REWIND_MAX_TOTAL_SIZE_MB": "1"}, check=True)
    first = chain(layout, wd)
    packs_before = sorted(os.listdir(layout.store / "objects" / "pack"))
    size_before = stored(layout)
    (wd / "big.bin").write_bytes(os.urandom(2 * MiB))
    (wd / "small.txt").unlink()
    proc = run_rewind("checkpoint", cwd=wd, env={"REWIND_MAX_TOTAL_SIZE_MB": "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "max_total_size_mb is 1" in lines[0] and "refused" in lines[0]
    # nothing recorded, nothing left behind
    assert chain(layout, wd) == first
    assert sorted(os.listdir(layout.store / "objects" / "pack")) == packs_before
    assert stored(layout) == size_before
    # the project's stat cache was not left holding what was refused
    (wd / "big.bin").unlink()
    (wd / "other.txt").write_text("other\n")
    run_rewind("checkpoint", cwd=wd, env={"REWIND_MAX_TOTAL_SIZE_MB": "1"}, check=True)
    files = complete(layout, chain(layout, wd)[0])
    assert set(files) == {b"other.txt"}


def test_refusal_counts_both_cores_shares(home, layout, tmp_path, caplog):
    """A large capture is stored on two cores, each share under the cap and both together
    over it: refused before either pack is visible, no temp file left."""
    wd = tmp_path / "p"
    wd.mkdir()
    for i in range(20):
        (wd / f"f{i:02d}.bin").write_bytes(os.urandom(MiB))
    items = [(os.fsencode(p.name), p.stat()) for p in wd.iterdir()]
    if not splitstore.worth_it(items, 20 * MiB):
        pytest.skip("this machine stores a capture on one core (splitstore.worth_it): "
                    "nothing to split")
    mgr = manager(home, max_total_size_mb=12)
    result = mgr.checkpoint(str(wd), "two cores")
    assert not result["success"] and "max_total_size_mb is 12" in result["error"]
    assert "\n" not in result["error"]
    pack_dir = layout.store / "objects" / "pack"
    assert [n for n in os.listdir(pack_dir) if n.startswith("tmp_")] == []
    assert not [n for n in os.listdir(pack_dir) if n.endswith(".pack")]
    assert chain(layout, wd) == []
    with caplog.at_level("WARNING", logger="rewindfs.agent.manager"):
        assert mgr.ensure_checkpoint(str(wd)) is False  # the agent API: never raises
    said = [r for r in caplog.records if "max_total_size_mb is 12" in r.getMessage()]
    assert said and said[0].levelname == "WARNING"  # said, not only at debug level


def test_hook_refusal_is_one_line_and_takes_nothing(home, layout, tmp_path):
    """The agent's hook (the real command, a Claude Code payload): the agent goes on, no
    checkpoint is recorded, the hook's answer tells the user in one line naming the cap
    (`systemMessage`), and its log holds the refusal."""
    wd = tmp_path / "p"
    wd.mkdir()
    (wd / "package.json").write_text("{}\n")   # a project
    (wd / "big.bin").write_bytes(os.urandom(2 * MiB))
    env = hook_env(home, REWIND_MAX_TOTAL_SIZE_MB="1")
    done = run_hook("claude-code", claude_payload(wd, "rm -rf build"), wd, env)
    message = json.loads(done.stdout)["systemMessage"]
    assert len(message.splitlines()) == 1, message
    assert "refused" in message and "max_total_size_mb is 1" in message, message
    assert chain(layout, wd) == []
    said = [line for line in log_lines(home) if "max_total_size_mb is 1" in line]
    assert len(said) == 1 and "refused" in said[0], log_lines(home)


# -- rewind status --------------------------------------------------------------------------

def test_status_shows_the_cap_the_size_and_the_last_pruning(home, layout, tmp_path,
                                                             run_rewind):
    env = {"REWIND_MAX_TOTAL_SIZE_MB": "1"}
    text = run_rewind("status", env=env, check=True).stdout
    assert "Size cap:" in text and "1.0 MiB" in text and "Last pruning:    none" in text
    mgr = manager(home, max_total_size_mb=1, max_snapshots=100)
    wd = tmp_path / "p"
    moment = time.time()
    for i in range(5):
        churn(wd, i)
        mgr.new_turn()
        mgr.ensure_checkpoint(str(wd))
    record = wait_until_pruned(layout, moment)
    assert record.dropped
    text = run_rewind("status", env=env, check=True).stdout
    cap_line = next(line for line in text.splitlines() if line.startswith("Size cap:"))
    assert "1.0 MiB" in cap_line and "max_total_size_mb" in cap_line
    last = next(line for line in text.splitlines() if line.startswith("Last pruning:"))
    n = len(record.dropped)
    assert f"{n} checkpoint{'s' if n > 1 else ''} dropped" in last and "over" in last
    assert str(wd) in text.split("Last pruning:", 1)[1]
    data = json.loads(run_rewind("status", "--json", env=env, check=True).stdout)
    assert data["cap_bytes"] == MiB and data["cap_size_bytes"] == stored(layout)
    went = data["last_pruning"]["dropped"]
    assert {d["commit"] for d in went} == {d.commit for d in record.dropped}
    assert all(d["why"] and d["workdir"] == str(wd) for d in went)
    off = run_rewind("status", env={"REWIND_MAX_TOTAL_SIZE_MB": "0"}, check=True).stdout
    assert "Size cap:        none" in off


# -- other writers during a pruning ----------------------------------------------------------

STOP = "REWIND_TEST_STOP_CHECKPOINT"


def stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def over_the_cap(home: Path, tmp_path: Path, count: int = 6) -> Path:
    """A project with `count` checkpoints of CHUNK each: over a 1 MB cap."""
    mgr = manager(home, max_total_size_mb=0, max_snapshots=100)
    wd = tmp_path / "old"
    for i in range(count):
        churn(wd, i)
        mgr.new_turn()
        mgr.ensure_checkpoint(str(wd))
    return wd


def start_pruner(layout: Layout, env: dict[str, str], cap_mb: int = 1) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rewindfs.store.maintenance.autocap",
                             "--base", str(layout.base), "--max-size-mb", str(cap_mb)],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


@pytest.mark.parametrize("size", [400 * KB, 3 * MiB // 2], ids=["loose", "packed"])
def test_pruning_during_a_checkpoint_keeps_what_it_writes(home, user_home, layout, tmp_path,
                                                          fsck, size):
    """A `rewind checkpoint` stopped once its objects are written (a few loose ones, or a
    pack) and before its ref moves, so no ref reaches them (its files only through its
    project's index, its commit not at all): a pruning over the cap runs meanwhile, its
    repack done, its prune step waits for the writer; let go, the checkpoint completes
    whole."""
    old = over_the_cap(home, tmp_path)
    wd = tmp_path / "new"
    wd.mkdir()
    payload = os.urandom(size)
    (wd / "fresh.bin").write_bytes(payload)
    blob = str(pygit2.hash(payload))
    packs = set(os.listdir(layout.store / "objects" / "pack"))
    writer = subprocess.Popen([REWIND, "checkpoint", str(wd)], cwd=wd,
                              env=rewind_env(home, user_home, **{STOP: "1"}),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    pruner = None
    try:
        wait_for(lambda: stopped(writer.pid), "the checkpoint to stop before its ref moves")
        assert pygit2.Repository(str(layout.store)).get(blob) is not None  # written ...
        assert chain(layout, wd) == []  # ... and nothing reaches it yet
        new_packs = set(os.listdir(layout.store / "objects" / "pack")) - packs
        assert any(n.endswith(".idx") for n in new_packs) == (size > MiB)
        assert (False, "READ", writer.pid) in flocks(layout.lock_file(writers.WRITERS))
        pruner = start_pruner(layout, rewind_env(home, user_home))
        # The pruner got past its repack to its prune step: it holds the gate, waiting
        # for the writer (after looking for a moment free of writers, unseen, in vain).
        wait_for(lambda: (False, "WRITE", pruner.pid) in flocks(
            layout.lock_file(writers.GATE)), "the pruner to wait for the writer")
        assert pygit2.Repository(str(layout.store)).get(blob) is not None
    finally:
        os.kill(writer.pid, signal.SIGCONT)
        out, err = writer.communicate(timeout=120)
        if pruner is not None:
            pruner.communicate(timeout=300)
    assert writer.returncode == 0, err.decode()
    assert pruner.returncode == 0
    record = caprecord.read(layout)
    assert record is not None and record.dropped and record.by == "after a checkpoint"
    taken = chain(layout, wd)
    assert len(taken) == 1 and blob_of(layout, taken[0], "fresh.bin") == payload
    assert len(chain(layout, old)) < 6
    fsck()


GIT_WRAPPER = """#!/bin/sh
# git, for Hermes in this test: stops before its ref moves until the test lets it go
if [ "$1" = "update-ref" ]; then
    touch "$HOLD_DIR/paused"
    while [ -e "$HOLD_DIR/hold" ]; do sleep 0.02; done
fi
exec {git} "$@"
"""

HERMES_WRITER = """
import logging, sys
import tools.checkpoint_manager as hcm
from pathlib import Path
hcm.CHECKPOINT_BASE = Path(sys.argv[1])
mgr = hcm.CheckpointManager(enabled=True, max_snapshots=50)
print(mgr.ensure_checkpoint(sys.argv[2], "hermes in flight"), flush=True)
"""


def test_pruning_during_a_hermes_checkpoint_keeps_what_it_writes(home, user_home, layout,
                                                                 tmp_path, fsck, hcm):
    """Hermes (upstream 0.19, a process of its own) stopped between writing its objects
    and moving its ref: Hermes takes no lock rewindfs can wait for, so the pruning keeps
    what is young enough to be Hermes's in flight; let go, its checkpoint is whole."""
    import shutil

    old = over_the_cap(home, tmp_path)
    wd = tmp_path / "hermes-project"
    wd.mkdir()
    payload = os.urandom(300 * KB)
    (wd / "fresh.bin").write_bytes(payload)
    bindir, hold = tmp_path / "bin", tmp_path / "hold"
    bindir.mkdir()
    hold.mkdir()
    (hold / "hold").touch()
    (bindir / "git").write_text(GIT_WRAPPER.format(git=shutil.which("git")))
    (bindir / "git").chmod(0o755)
    env = {**rewind_env(home, user_home), "HOLD_DIR": str(hold),
           "PATH": f"{bindir}:{os.environ['PATH']}"}
    hermes = subprocess.Popen([sys.executable, "-c", HERMES_WRITER, str(layout.base), str(wd)],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    pruner = None
    try:
        wait_for(lambda: (hold / "paused").exists() or hermes.poll() is not None,
                 "Hermes to stop before its ref moves")
        assert hermes.poll() is None, hermes.communicate()
        blob = str(pygit2.hash(payload))
        repo = pygit2.Repository(str(layout.store))
        assert repo.get(blob) is not None  # written, and nothing reaches it yet
        assert not repo.references.get(f"refs/hermes/{project_hash(wd)}")
        pruner = start_pruner(layout, rewind_env(home, user_home))
        assert pruner.wait(timeout=300) == 0, pruner.stdout.read()
        record = caprecord.read(layout)
        assert record is not None and record.dropped and record.hermes_active
        assert pygit2.Repository(str(layout.store)).get(blob) is not None
    finally:
        (hold / "hold").unlink()
        out, err = hermes.communicate(timeout=120)
    assert out.decode().strip() == "True", err.decode()
    ref = pygit2.Repository(str(layout.store)).references[f"refs/hermes/{project_hash(wd)}"]
    assert blob_of(layout, str(ref.target), "fresh.bin") == payload
    assert len(chain(layout, old)) < 6
    fsck()
