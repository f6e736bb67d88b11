"""Bounded fault injection (issue 10, "Done when"): real `rewind checkpoint`, `restore`,
`undo` and `prune` processes killed with SIGKILL at random moments (half of the kills of
restores and undos after a random number of files, paused there by the restore's test
hook, so they land inside the restore; at least one does in every run), then:

* `git fsck` on the store passes;
* every acknowledged checkpoint (one whose `rewind checkpoint` printed its hash) is still
  readable and holds exactly the files it was taken of;
* after a killed restore or undo that got as far as its intent record, `rewind undo`
  returns the tree to the state it had before that restore; one killed before it
  changed nothing.

Bounded by ITERATIONS and SECONDS, whichever comes first. The random seed is printed
(FAULT_SEED=<n> replays a run).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import pytest
from conftest import PAUSE_RESTORE, REWIND, rewind_env, signal_when_paused
from test_restore_helpers import git_view, picture, write

from rewindfs.store import project_hash

ITERATIONS = 24
SECONDS = 150.0
FILES = 200


def differences(got: dict, want: dict) -> str:
    """A short account of how two pictures differ."""
    extra = sorted(set(got) - set(want))[:5]
    missing = sorted(set(want) - set(got))[:5]
    changed = sorted(k for k in set(got) & set(want) if got[k] != want[k])[:5]
    return f"extra {extra}, missing {missing}, changed {changed}"


def visible(pic: dict[bytes, tuple]) -> dict[bytes, tuple]:
    """A picture without restore temp files (tidied by the next restore) or empty dirs."""
    files = {k: v for k, v in pic.items() if b".rewind-" not in k.rpartition(b"/")[2]}
    parents = {k.rpartition(b"/")[0] for k in files}
    return {k: v for k, v in files.items() if v[0] != "dir" or k in parents}


class Run:
    def __init__(self, home, tmp_path, project, store_git, files_of):
        self.env = rewind_env(home, tmp_path / "user-home", REWIND_MAX_SNAPSHOTS="1000")
        self.project = project
        self.store_git = store_git
        self.files_of = files_of
        self.journal = (home / "checkpoints/store/worktrees" / project_hash(project)
                        / "restores.jsonl")
        self.acked: dict[str, dict] = {}  # checkpoint id -> files it was taken of
        self.before_entry: list[dict] = []  # tree before each journal entry, in order
        # Files edited since the last journal entry: an undo then keeps the edits of paths
        # that entry did not touch, so the tree before it is no longer what undo gives.
        self.edited_since_entry = False
        self.log: list[str] = []
        self.inside_kills = 0  # restores and undos killed while paused midway

    def start(self, *args: str, pause_after: int | None = None) -> subprocess.Popen:
        env = self.env if pause_after is None else {**self.env, PAUSE_RESTORE: str(pause_after)}
        return subprocess.Popen([REWIND, *args], cwd=self.project, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def finish(self, proc: subprocess.Popen, kill_after: float | None,
               paused: bool = False):
        """Wait for `proc`; SIGKILL it `kill_after` seconds from now or, when it was
        started with `pause_after` (`paused`), once it paused there: inside the restore."""
        if paused:
            stopped, code, out, err = signal_when_paused(proc, signal.SIGKILL)
            self.inside_kills += stopped
            return code, out, err
        if kill_after is not None:
            try:
                proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        return proc.returncode, out, err

    def entries(self) -> int:
        try:
            lines = self.journal.read_text().splitlines()
        except OSError:
            return 0
        count = 0
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            count += record.get("event", "begin") == "begin"
        return count

    # -- operations ------------------------------------------------------------------

    def take(self, rng: random.Random, kill_after: float | None) -> str | None:
        self.edited_since_entry = True
        for i in rng.sample(range(FILES), 40):
            write(self.project, {f"d{i % 7}/f{i}.txt": f"{rng.random()}\n" * rng.randint(1, 50)})
        for i in rng.sample(range(FILES), 3):
            (self.project / f"d{i % 7}/f{i}.txt").unlink(missing_ok=True)
        expected = git_view(self.project)
        code, out, err = self.finish(self.start("checkpoint", "-m", "fi", "--json"), kill_after)
        self.log.append(f"take -> {code}")
        if code == 0:
            commit = json.loads(out)["hash"]
            assert self.files_of(commit) == expected, "an acknowledged checkpoint is wrong"
            self.acked[commit] = expected
            return commit
        assert code == -signal.SIGKILL, (code, err)
        return None

    def restore_or_undo(self, args: list[str], kill_after: float | None,
                        expected_after: dict | None, pause_after: int | None = None) -> None:
        before = visible(picture(self.project))
        entries = self.entries()
        code, out, err = self.finish(self.start(*args, pause_after=pause_after), kill_after,
                                     pause_after is not None)
        self.log.append(f"{args[0]} -> {code}")
        recorded = self.entries() > entries
        if recorded:
            self.before_entry.append(before)
            self.edited_since_entry = False
        if code == 0:
            assert recorded, "a finished restore left no journal entry"
            if expected_after is not None:
                now = visible(picture(self.project))
                assert now == expected_after, \
                    f"{self.log}: {differences(now, expected_after)}"
            return
        if code == 1 and "nothing to undo" in err:
            return
        assert code == -signal.SIGKILL, (args, code, out, err)
        if not recorded:
            now = visible(picture(self.project))
            assert now == before, (f"{args[0]} killed before its intent record changed the "
                                   f"tree: {self.log}: {differences(now, before)}")
            return
        self.undo_completely()

    def undo_completely(self) -> None:
        """`rewind undo`, not killed: the tree must be as before the last journal entry."""
        want = self.before_entry[-1]
        before = visible(picture(self.project))
        proc = self.start("undo")
        code, out, err = self.finish(proc, None)
        self.log.append(f"undo (recovery) -> {code}")
        assert code == 0, (out, err)
        self.edited_since_entry = False
        now = visible(picture(self.project))
        assert now == want, ("undo after a killed operation did not return to its "
                             f"pre-rollback state: {self.log}: {differences(now, want)}")
        self.before_entry.append(before)

    def prune(self, kill_after: float | None) -> None:
        code, _, err = self.finish(self.start("prune", "-f"), kill_after)
        self.log.append(f"prune -> {code}")
        assert code in (0, -signal.SIGKILL), (code, err)

    def check_store(self) -> None:
        proc = self.store_git("fsck", "--no-dangling", check=False)
        assert proc.returncode == 0, f"git fsck failed after {self.log}:\n{proc.stderr}"
        for commit, files in self.acked.items():
            assert self.files_of(commit) == files, f"checkpoint {commit[:8]} changed"


@pytest.fixture
def run(home, tmp_path, project, store_git, files_of):
    for i in range(FILES):
        write(project, {f"d{i % 7}/f{i}.txt": f"initial {i}\n" * 20})
    return Run(home, tmp_path, project, store_git, files_of)


@pytest.mark.long
def test_killed_at_random_moments(run):
    seed = int(os.environ.get("FAULT_SEED") or random.SystemRandom().randrange(10**6))
    print(f"fault injection seed {seed} (FAULT_SEED={seed} replays it)")
    rng = random.Random(seed)
    first = run.take(rng, None)
    run.take(rng, None)
    # One kill inside a restore whatever the dice say: back to the first checkpoint
    # rewrites the (at least 40) files the second changed, paused after 1 to 39 of them.
    run.restore_or_undo(["restore", first, "--yes"], None, None, rng.randint(1, 39))
    assert run.inside_kills == 1, run.log
    run.check_store()
    deadline = time.monotonic() + SECONDS
    iterations = 0
    while iterations < ITERATIONS and time.monotonic() < deadline:
        iterations += 1
        kill_after = None if rng.random() < 0.2 else rng.uniform(0.05, 2.5)
        inside = rng.randint(1, 60) if kill_after is not None and rng.random() < 0.5 else None
        op = rng.choice(["take", "restore", "restore", "undo", "prune"])
        if op == "take":
            run.take(rng, kill_after)
        elif op == "restore":
            current = git_view(run.project)
            targets = [c for c, files in run.acked.items() if files != current]
            if not targets:
                continue
            target = rng.choice(targets)
            run.restore_or_undo(["restore", target, "--yes"], kill_after, None, inside)
            if run.log[-1] == "restore -> 0":
                assert git_view(run.project) == run.acked[target]
        elif op == "undo":
            if not run.before_entry or run.edited_since_entry:
                continue
            run.restore_or_undo(["undo"], kill_after, run.before_entry[-1], inside)
        else:
            run.prune(kill_after)
        run.check_store()
    print(f"{iterations} operations, {run.inside_kills} killed inside a restore: "
          f"{', '.join(run.log)}")
