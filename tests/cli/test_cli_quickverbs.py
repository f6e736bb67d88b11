"""The quick paths (issue 21): `rewind list` and `rewind cat` answered before click, from
the store read in Python (store.objects.rawodb, store.history.quickread), and a no-change
`rewind checkpoint` from the project's stat stamp (store.history.stamp), print what the
click commands print byte for byte, and import neither click, rich nor pygit2; what they
are not sure of (errors, warnings, Hermes checkpoints without stats, a change) goes to
click.

Each comparison runs the real `rewind` (exec'd: which modules its start-up imports is the
point) and, beside it, the click group run directly (forked from the tests' fork server,
tests/forkrun.py: only what it prints is compared). Both take `rewind list`'s ages
(`5s ago`) from the same function, each at its own moment: ages are compared as words,
with everything around them byte for byte."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import forkrun
import pytest
from conftest import DAY, REWIND, rewind_env, wait_for

from rewindfs.hooks import helper
from rewindfs.store import project_hash, set_label, take

AGE = re.compile(r" *\b(now|\d+[smhd] ago)\b")  # with its padding (a right-aligned column)
SLOW = ("click", "rich", "pygit2")


def both(args: list[str], cwd, env: dict[str, str]):
    """(quick run, click run, modules the quick run imported)."""
    quick = subprocess.run([sys.executable, "-X", "importtime", REWIND, *args], cwd=cwd,
                           env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    slow = forkrun.run(REWIND, args, cwd=cwd, env=env, timeout=60, entry="group", text=False)
    modules, err = set(), []
    for line in quick.stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            modules.add(line.rsplit("|", 1)[1].strip())
        else:
            err.append(line)
    quick.stderr = "\n".join(err).encode() + (b"\n" if err else b"")
    return quick, slow, modules


def same_output(args: list[str], cwd, env) -> set[str]:
    """Both print the same (each names ages from its own "now": those are compared as
    the same words in the same columns); the quick run's imports."""
    quick, slow, modules = both(args, cwd, env)
    assert (quick.returncode, quick.stderr) == (slow.returncode, slow.stderr), \
        (quick.stderr, slow.stderr)
    assert AGE.sub(" AGE", quick.stdout.decode()) == AGE.sub(" AGE", slow.stdout.decode())
    return modules


@pytest.fixture
def env(home, tmp_path):
    return rewind_env(home, tmp_path)


@pytest.fixture
def history(project, store, run_rewind):
    """Three checkpoints, a label, and a restore's pre-rollback snapshot."""
    ids = []
    for i in range(3):
        (project / "src" / "pkg" / "core.py").write_text(f"def add(a, b):\n    return {i}\n")
        (project / f"new{i}.txt").write_text(f"{i}\n" * (i + 1))
        ids.append(take(store, project, f"step {i}").commit)
    set_label(store, project_hash(project), "v1", ids[1])
    (project / "README.md").write_text("changed\n")
    run_rewind("restore", "1", "README.md", "--yes", cwd=project, check=True)
    run_rewind("list", cwd=project, check=True)  # caches the first checkpoint's size
    return ids


CASES = [["list"], ["list", "--json"], ["cat", "1", "src/pkg/core.py"],
         ["cat", "v1", "new1.txt"], ["cat", "3", "README.md"], ["cat", "latest", "new2.txt"]]


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_quick_answers_as_click_does_without_importing_it(args, history, project, env):
    modules = same_output(args, project, env)
    assert not {m for m in modules if m.split(".")[0] in SLOW}, sorted(modules)


@pytest.mark.parametrize("args", [["cat", "1", "core.py"], ["cat", "2", "../../README.md"]],
                         ids=" ".join)
def test_paths_from_a_subdirectory(args, history, project, env):
    modules = same_output(args, project / "src" / "pkg", env)
    assert "pygit2" not in modules


def test_packed_store_with_deltas(history, project, env, store_git):
    """After git's gc the objects are in one pack, deltas against each other."""
    store_git("-c", "gc.auto=0", "repack", "-adf", "--depth=50", "--window=50")
    assert "pygit2" not in same_output(["list"], project, env)
    assert "pygit2" not in same_output(["cat", "v1", "new1.txt"], project, env)


@pytest.mark.parametrize("args", [["cat", "9", "README.md"], ["cat", "1", "nope.txt"],
                                  ["cat", "1", "src"], ["cat", "zzzz", "README.md"],
                                  ["cat", "1", "../../etc/passwd"]],
                         ids=" ".join)
def test_errors_are_clicks(args, history, project, env):
    modules = same_output(args, project, env)
    assert "click" in modules  # told by the click command, in its words


def test_no_store_yet(project, env):
    modules = same_output(["list"], project, env)
    assert "pygit2" not in modules
    assert "click" in same_output(["cat", "1", "README.md"], project, env)


def test_hermes_checkpoint_without_stats_goes_to_click(history, project, env, store_git):
    """A checkpoint whose commit records no stats (Hermes writes none): libgit2 computes
    them, so the quick path steps aside."""
    ref = f"refs/hermes/{project_hash(project)}"
    tip = store_git("rev-parse", ref).stdout.strip()
    tree = store_git("rev-parse", f"{tip}^{{tree}}").stdout.strip()
    made = store_git("-c", "user.name=h", "-c", "user.email=h@h", "commit-tree", tree,
                     "-p", tip, "-m", "hermes checkpoint").stdout.strip()
    store_git("update-ref", ref, made)
    assert "pygit2" in same_output(["list"], project, env)
    assert "pygit2" not in same_output(["cat", "1", "new0.txt"], project, env)


def stamp_of(store_dir, project) -> Path:
    return store_dir / "stamps" / f"{project_hash(project)}.json"


def checkpoint_and_stamp(run_rewind, project, store_dir, *args: str) -> None:
    """`rewind checkpoint` (the click command, something changed), then its stat stamp,
    written by a detached child once the command is done."""
    path = stamp_of(store_dir, project)
    path.unlink(missing_ok=True)
    time.sleep(0.15)  # past the stamp's racy-clean margin for the files just written
    out = run_rewind("checkpoint", *args, cwd=project, check=True).stdout
    assert "taken" in out, out
    end = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < end, "no stamp after the checkpoint"
        time.sleep(0.01)


@pytest.mark.parametrize("args", [["checkpoint"], ["checkpoint", "--json"],
                                  ["checkpoint", "-m", "why"], ["checkpoint", "--json",
                                                                "--message=why"]],
                         ids=" ".join)
def test_no_change_checkpoint_from_the_stamp(args, project, env, store_dir, run_rewind):
    checkpoint_and_stamp(run_rewind, project, store_dir)
    record = store_dir / "projects" / f"{project_hash(project)}.json"
    data = json.loads(record.read_text())
    data["last_touch"] -= 2 * DAY  # (a recent one is not rewritten: projects.touch)
    record.write_text(json.dumps(data))
    modules = same_output(args, project, env)
    assert not {m for m in modules if m.split(".")[0] in SLOW}, sorted(modules)
    assert json.loads(record.read_text())["last_touch"] > data["last_touch"] + DAY  # touched


def helper_up(project, env, store_dir, run_rewind, run_env=None) -> Callable[[str], bool]:
    """A stamped checkpoint, then a change whose `rewind checkpoint` (the click command: no
    helper yet) starts the helper; returns when the helper is up and that checkpoint
    stamped. What it returns says whether the stamp is that of the checkpoint named."""
    checkpoint_and_stamp(lambda *a, **k: run_rewind(*a, env=run_env, **k), project, store_dir)
    path = stamp_of(store_dir, project)

    def stamped(commit: str) -> bool:
        return path.exists() and json.loads(path.read_text())["commit"] == commit

    (project / "docs" / "guide.txt").write_text("edited\n")
    time.sleep(0.15)  # past the stamp's racy-clean margin for the file just written
    modules = imported_by(["checkpoint", "--json"], project, env)
    first = json.loads(modules[""])
    assert first["taken"] and "pygit2" in modules
    wait_for(lambda: helper.running(Path(env["HERMES_HOME"]) / "rewind-hooks") is not None,
             "the helper to start")
    wait_for(lambda: stamped(first["hash"]), "the stamp of the second checkpoint")
    return stamped


def test_a_change_is_captured_by_the_helper(project, env, store_dir, run_rewind):
    """After a change the first `rewind checkpoint` takes it itself (pygit2) and starts the
    agent hooks' resident helper; the next takes only what changed through the helper
    (no pygit2 here) and says what the click command says."""
    stamped = helper_up(project, env, store_dir, run_rewind)
    (project / "docs" / "guide.txt").write_text("edited again\n")
    (project / "new.txt").write_text("new\n")  # a new file: only its directory's mtime says
    time.sleep(0.15)  # (so that the helper's checkpoint leaves a stamp)
    modules = imported_by(["checkpoint", "-m", "by the helper", "--json"], project, env)
    done = json.loads(modules.pop(""))
    assert "pygit2" not in modules and "click" not in modules
    assert done["taken"] and done["directory"] == str(project) and done["skipped_files"] == {}
    assert done == {**done, "label": None, "adopted_from": None}
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    assert [cp["reason"] for cp in listed[:2]] == ["by the helper", "manual checkpoint"]
    assert listed[0]["hash"] == done["hash"]
    for path, text in (("docs/guide.txt", "edited again\n"), ("new.txt", "new\n"),
                       ("README.md", (project / "README.md").read_text())):
        assert run_rewind("cat", "1", path, cwd=project, check=True).stdout == text
    # The helper's capture of those paths leaves a stamp that knows nothing was left out:
    # the next no-change checkpoint is answered from it.
    wait_for(lambda: stamped(done["hash"]), "the helper's checkpoint's stamp")
    assert json.loads(stamp_of(store_dir, project).read_text())["skipped"] == {}
    modules = imported_by(["checkpoint"], project, env)
    assert "pygit2" not in modules and "no changes since" in modules[""]


def test_what_the_helper_left_out_is_reported(project, env, store_dir, run_rewind):
    """A changed file the helper's capture leaves out (over the size cap) is reported as
    the click command reports it, and keeps being reported (by the click command: the
    stamp no longer knows everything that is left out)."""
    cap = {"REWIND_MAX_FILE_SIZE_MB": "0.001"}
    env.update(cap)
    stamped = helper_up(project, env, store_dir, run_rewind, cap)
    (project / "docs" / "guide.txt").write_bytes(b"x" * 4096)
    time.sleep(0.15)
    quick = subprocess.run([REWIND, "checkpoint", "--json"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=60)
    done = json.loads(quick.stdout)
    assert done["skipped_files"] == {"oversize": ["docs/guide.txt"]}
    assert quick.stderr == "rewind: warning: skipped 1 file(s) over max_file_size_mb: " \
        "docs/guide.txt\n"
    wait_for(lambda: stamped(done["hash"]), "the helper's checkpoint's stamp")
    assert "skipped" not in json.loads(stamp_of(store_dir, project).read_text())
    again = same_output(["checkpoint"], project, env)
    assert "pygit2" in again


def imported_by(args: list[str], cwd, env) -> dict[str, str]:
    """The modules `rewind ARGS` imports, and its stdout under the key ""."""
    proc = subprocess.run([sys.executable, "-X", "importtime", REWIND, *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = {line.rsplit("|", 1)[1].strip(): "" for line in proc.stderr.splitlines()
           if line.startswith("import time:") and "|" in line}
    return {**out, "": proc.stdout}


def test_skipped_files_are_reported_by_click(project, env, store_dir, run_rewind):
    """A file over the size cap is left out of every checkpoint, and every checkpoint says
    so: the stamp remembers, the warning is the click command's to print."""
    (project / "big.bin").write_bytes(b"x" * 4096)
    env["REWIND_MAX_FILE_SIZE_MB"] = "0.001"
    checkpoint_and_stamp(lambda *a, **k: run_rewind(*a, env={"REWIND_MAX_FILE_SIZE_MB":
                                                             "0.001"}, **k),
                         project, store_dir)
    modules = same_output(["checkpoint"], project, env)
    assert "pygit2" in modules
    quick = subprocess.run([REWIND, "checkpoint"], cwd=project, env=env, capture_output=True,
                           text=True)
    assert "no changes" in quick.stdout and "big.bin" in quick.stderr


def test_diff_stat_from_the_stamp(project, env, store_dir, run_rewind):
    """Edited and deleted files, counted without libgit2 as libgit2 counts them."""
    (project / "many.txt").write_text("".join(f"line {i}\n" for i in range(300)))
    checkpoint_and_stamp(run_rewind, project, store_dir)
    (project / "src" / "pkg" / "core.py").write_text("def add(a, b):\n    return b + a\n")
    (project / "docs" / "guide.txt").unlink()
    (project / "many.txt").write_text("".join(f"line {i}\n" for i in range(300) if i % 7)
                                      + "tail")
    (project / "README.md").touch()  # metadata only: no change
    modules = same_output(["diff", "--stat"], project, env)
    assert not {m for m in modules if m.split(".")[0] in SLOW}, sorted(modules)
    assert "3 files changed" in subprocess.run([REWIND, "diff", "--stat"], cwd=project,
                                               env=env, capture_output=True, text=True).stdout


def test_diff_stat_with_a_new_file_is_clicks(project, env, store_dir, run_rewind):
    """A new file may be ignored: only libgit2 knows the project's ignore rules."""
    checkpoint_and_stamp(run_rewind, project, store_dir)
    (project / "new.txt").write_text("new\n")
    (project / "debug.log").write_text("ignored by default\n")
    assert "pygit2" in same_output(["diff", "--stat"], project, env)
