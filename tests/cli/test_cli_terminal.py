"""What only a terminal gets (issue 15), driven on a real pseudo-terminal: progress with
totals and rates, the notice while another process holds the project, colour (and
NO_COLOR / --color), the pager (less -FRX, $PAGER, --no-pager), and the restore
confirmation naming what will be overwritten and why safe mode is on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REWIND
from terminal import PtyProcess

from rewindfs.store import Layout, project_hash, take
from rewindfs.store.objects.locks import file_lock


@pytest.fixture
def tty(child_env):
    def start(*args: str, cwd=None, stdout_tty: bool = True, **env: str) -> PtyProcess:
        return PtyProcess([REWIND, *map(str, args)], cwd=cwd,
                          env=child_env(TERM="xterm", **env), stdout_tty=stdout_tty)

    return start


def many_files(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"d{i % 20}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n" * 10)


def test_first_checkpoint_shows_progress_with_rate(tty, project):
    many_files(project, 1200)
    proc = tty("checkpoint", project, REWIND_PROGRESS_DELAY="0")
    proc.expect(r"checkpoint [0-9a-f]{8} taken")
    assert proc.wait() == 0
    # Files with their total; the rate only once the capture outlasts a display refresh
    # (a quiet machine captures these 1,200 files faster than that).
    assert re.search(rb"checkpoint .*[\d,]+/[\d,]+ files\b", proc.plain), proc.plain


def test_restore_shows_progress_with_totals_and_rate(tty, project, store):
    many_files(project, 800)
    take(store, project, "many")
    for i in range(0, 800, 2):
        (project / f"d{i % 20}" / f"f{i}.txt").write_text("changed\n")
    proc = tty("restore", "1", "-C", project, "--yes", REWIND_PROGRESS_DELAY="0")
    proc.expect(r"restored .* to [0-9a-f]{8}")
    assert proc.wait() == 0
    # The rate shows once the restore outlasts a display refresh, which a quiet machine
    # may beat: totals are what must show.
    assert re.search(rb"restoring .*400/400 files, [\d.]+ (?:[KMG]i)?B", proc.plain), proc.plain


def test_no_progress_without_a_terminal(run_rewind, project):
    many_files(project, 600)
    proc = run_rewind("checkpoint", project, env={"REWIND_PROGRESS_DELAY": "0"}, check=True)
    assert proc.stderr == ""


def test_waiting_for_another_process_is_explained(tty, project, store, home):
    take(store, project, "first")
    (project / "new.txt").write_text("new\n")
    lock = Layout(home / "checkpoints").lock_file(project_hash(project))
    release = threading.Event()
    held = threading.Event()

    def hold() -> None:
        with file_lock(lock):
            held.set()
            release.wait(120)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        held.wait(30)
        proc = tty("checkpoint", project)
        proc.expect(rf"waiting for process {os.getpid()} \(\w+\) to finish with this project")
    finally:
        release.set()
        holder.join()
    proc.expect(r"checkpoint [0-9a-f]{8} taken")
    assert proc.wait() == 0


# -- colour -------------------------------------------------------------------------------


@pytest.fixture
def changed(store, project):
    take(store, project, "base")
    (project / "README.md").write_text("# changed\n")
    return project


GREEN_PLUS = re.compile(rb"\x1b\[32m\+")


def test_diff_in_colour_on_a_terminal(tty, changed):
    proc = tty("diff", "--no-pager", cwd=changed)
    proc.expect(r"\+# changed")
    assert proc.wait() == 0
    assert GREEN_PLUS.search(proc.output), proc.output
    assert b"\x1b[31m-" in proc.output


def test_no_color_and_color_never_are_plain(tty, changed):
    for args, env in ((("diff", "--no-pager"), {"NO_COLOR": "1"}),
                      (("diff", "--no-pager", "--color", "never"), {}),
                      (("--color=never", "--no-pager", "diff"), {})):
        proc = tty(*args, cwd=changed, **env)
        proc.expect(r"\+# changed")
        assert proc.wait() == 0
        assert b"\x1b[3" not in proc.output, (args, proc.output)


def test_color_always_colours_a_pipe(run_rewind, changed):
    plain = run_rewind("diff", cwd=changed, check=True).stdout
    assert "\x1b[" not in plain
    coloured = run_rewind("diff", "--color", "always", cwd=changed, check=True).stdout
    assert "\x1b[32m+" in coloured
    listed = run_rewind("--color=always", "list", cwd=changed, check=True).stdout
    assert "\x1b[33m" in listed  # ids in yellow, as git shows hashes


def test_warnings_in_colour_on_a_terminal(tty, project):
    (project / "huge.bin").write_bytes(b"h" * (1024 * 1024 + 1))
    proc = tty("checkpoint", project, REWIND_MAX_FILE_SIZE_MB="1")
    proc.expect(r"rewind: warning: skipped 1 file")
    assert proc.wait() == 0
    assert re.search(rb"\x1b\[33mrewind: warning: skipped", proc.output), proc.output


# -- pager --------------------------------------------------------------------------------


@pytest.fixture
def recording_pager(tmp_path: Path) -> tuple[str, Path]:
    out = tmp_path / "paged.txt"
    script = tmp_path / "pager.sh"
    script.write_text(f'#!/bin/sh\n{{ echo "LESS=$LESS"; cat; }} > "{out}"\n')
    script.chmod(0o755)
    return str(script), out


def test_long_output_goes_through_the_pager(tty, changed, recording_pager):
    pager, out = recording_pager
    proc = tty("diff", cwd=changed, PAGER=pager)
    assert proc.wait() == 0
    paged = out.read_text()
    assert paged.startswith("LESS=FRX\n")  # as git sets it when LESS is unset
    assert "+# changed" in paged
    assert b"+# changed" not in proc.plain  # the pager got it, not the terminal
    out.unlink()
    log = tty("log", "README.md", cwd=changed, PAGER=pager, REWIND_PAGER="", LESS="-R")
    assert log.wait() == 0  # REWIND_PAGER (empty: no pager) wins over PAGER
    assert not out.exists() and b"README.md in " in log.plain


def test_no_pager_and_pipes_skip_the_pager(tty, changed, recording_pager, run_rewind):
    pager, out = recording_pager
    for args in (("diff", "--no-pager"), ("--no-pager", "diff")):
        proc = tty(*args, cwd=changed, PAGER=pager)
        proc.expect(r"\+# changed")
        assert proc.wait() == 0
        assert not out.exists()
    run_rewind("diff", cwd=changed, env={"PAGER": pager}, check=True)  # stdout is a pipe
    assert not out.exists()


def test_real_less_quits_on_one_screen_and_pages_long_output(tty, changed, store):
    short = tty("diff", cwd=changed)  # PAGER unset: less -FRX, one screen: no prompt
    short.expect(r"\+# changed")
    assert short.wait() == 0
    (changed / "long.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    long = tty("diff", "--full", cwd=changed)
    long.expect(r"\+line 9\n:")  # the first screen, then less waits at its prompt
    long.send("q")
    assert long.wait() == 0
    assert b"line 199" not in long.plain  # less stopped at the first screen


# -- restore confirmation ------------------------------------------------------------------


def test_confirmation_shows_overwrites_and_deletions(tty, store, project):
    take(store, project, "base")
    (project / "README.md").write_text("edited\n")
    (project / "extra.txt").write_text("new file\n")
    proc = tty("restore", "1", "-C", project)
    proc.expect(r"delete 1 file\(s\) and restore\? \[y/N\]")
    assert re.search(rb"overwrite 1: README\.md", proc.plain)
    assert re.search(rb"delete 1: extra\.txt", proc.plain)
    proc.send("n\n")
    assert proc.wait() == 1
    assert (project / "extra.txt").exists()
    assert (project / "README.md").read_text() == "edited\n"


def test_confirmation_says_when_safe_mode_is_on_and_why(tty, store, project, home):
    from rewindfs.agent.manager import CheckpointManager

    mgr = CheckpointManager(enabled=True, base=home / "checkpoints")
    take(store, project, "base")
    (project / "agent.txt").write_text("written by the agent\n")
    mgr.record_agent_write(str(project), "agent.txt")
    (project / "README.md").write_text("edited by a person\n")
    proc = tty("restore", "1", "-C", project)
    proc.expect(r"\[y/N\]")
    assert b"safe mode: the agent recorded its writes since this checkpoint" in proc.plain
    assert b"kept your edits" in proc.plain or b"kept (not written by the agent" in proc.plain
    proc.send("y\n")
    assert proc.wait() == 0
    assert not (project / "agent.txt").exists()
    assert (project / "README.md").read_text() == "edited by a person\n"


def test_pty_helper_sees_a_terminal(tty, tmp_path):
    """Guards the harness itself: what runs under it believes it is on a terminal."""
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.stdout.isatty())"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "False"
    proc = PtyProcess([sys.executable, "-c", "import sys; print(sys.stdout.isatty())"])
    proc.expect("True")
    assert proc.wait() == 0


def test_prune_shows_progress(tty, store, tmp_path, home):
    from conftest import age

    from rewindfs.store import Layout

    layout = Layout(home / "checkpoints")
    for i in range(3):
        stale = tmp_path / f"stale{i}"
        stale.mkdir()
        (stale / "f.txt").write_text(f"{i}\n" * 100)
        take(store, stale, "old")
        age(layout, stale, 30)
    proc = tty("prune", "-f", "--retention-days", "7",
               REWIND_PROGRESS_DELAY="0")
    proc.expect(r"Bytes reclaimed")
    assert proc.wait() == 0
    assert re.search(rb"removing projects .*3/3 projects", proc.plain), proc.plain
