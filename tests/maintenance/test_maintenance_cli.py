"""`rewind config`, `status`, `prune`, `clear`, `clear-legacy`: output and exit codes, run as the
real console script (without a terminal, and on a pseudo-terminal where a question is asked)."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import REWIND, age, force_unmount, rewind_env

from rewindfs.store import Layout, Store, project_hash, set_label, take
from rewindfs.store.maintenance import legacy
from rewindfs.store.objects import shadowrepos


def checkpoint(store: Store, workdir: Path, count: int = 1) -> list[str]:
    workdir.mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(count):
        (workdir / "f.txt").write_text(f"{workdir.name} {i} {time.time()}\n")
        made.append(take(store, workdir, f"step {i}").commit)
    return made


def exists(layout: Layout, workdir: Path) -> bool:
    return layout.project_record(project_hash(workdir)).exists()


def one_line_error(proc: subprocess.CompletedProcess, code: int = 1) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


class Terminal:
    """`rewind` on a pseudo-terminal: read what it prints, answer its questions."""

    def __init__(self, home: Path, tmp_path: Path, *args: str):
        env = rewind_env(home, tmp_path / "tty-home", TERM="dumb")
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([REWIND or sys.executable, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.output = ""

    def read_until(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            left = deadline - time.monotonic()
            assert left > 0, f"never printed {text!r}; got:\n{self.output}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk:
                    break
                self.output += chunk.decode(errors="replace")
        assert text in self.output, self.output
        return self.output

    def answer(self, text: str) -> None:
        os.write(self.master, text.encode() + b"\n")

    def finish(self) -> int:
        try:
            self.read_until("\x00never", timeout=30)
        except AssertionError:
            pass
        code = self.proc.wait(30)
        os.close(self.master)
        return code


# -- config --------------------------------------------------------------------------------

def test_config_shows_values_and_sources(run_rewind, home):
    (home / "config.yaml").write_text("checkpoints:\n  max_snapshots: 7\n  enabled: true\n")
    proc = run_rewind("config", env={"REWIND_RETENTION_DAYS": "3"}, check=True)
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()[3:]}
    assert rows["max_snapshots"][1:] == ["7", str(home / "config.yaml")]
    assert rows["enabled"][1:] == ["true", str(home / "config.yaml")]
    assert rows["retention_days"][1:] == ["3", "$REWIND_RETENTION_DAYS"]
    assert rows["max_total_size_mb"][1:] == ["500", "default"]
    assert rows["mountpoint"][1:] == [str(home / "mnt"), "default"]
    data = json.loads(run_rewind("config", "--json", check=True).stdout)["settings"]
    assert data["max_snapshots"] == {"value": 7, "source": str(home / "config.yaml")}
    assert data["extra_excludes"] == {"value": [], "source": "default"}


def test_config_bad_value_is_one_line_error(run_rewind, home):
    (home / "config.yaml").write_text("checkpoints:\n  retention_days: soon\n")
    line = one_line_error(run_rewind("config"))
    assert "retention_days" in line and str(home / "config.yaml") in line


# -- status --------------------------------------------------------------------------------

def test_status_without_a_store(run_rewind, home):
    proc = run_rewind("status", check=True)
    assert f"Checkpoint base: {home / 'checkpoints'}" in proc.stdout
    assert "Projects:        0" in proc.stdout
    data = json.loads(run_rewind("status", "--json", check=True).stdout)
    assert data["project_count"] == 0 and data["mount"]["state"] == "not mounted"


def test_status_lists_projects_states_and_sizes(run_rewind, store, layout, tmp_path):
    live, stale, orphan = tmp_path / "live", tmp_path / "stale", tmp_path / "dir" / "orphan"
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "other.txt").write_text("the parent holds more than the project\n")
    checkpoint(store, live, 3)
    checkpoint(store, stale, 1)
    checkpoint(store, orphan, 2)
    (live / "big.bin").write_bytes(os.urandom(50_000))
    take(store, live, "big")
    set_label(store, project_hash(live), "v1", checkpoint(store, live)[0])
    age(layout, stale, 30)
    shutil.rmtree(orphan)
    proc = run_rewind("status", check=True)
    rows: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():  # the table's rows (the first mention of each)
        if line.startswith("  /"):
            rows.setdefault(line.split()[0], line.split())
    assert rows[str(live)][1] == "5" and rows[str(live)][-1] == "live"
    assert rows[str(stale)][1:3] == ["1", "30d"] and rows[str(stale)][-1] == "stale"
    assert rows[str(orphan)][-4:-2] == ["deleted", "since"]
    assert f"{orphan}  deleted since " in proc.stdout and "rewind adopt" in proc.stdout
    assert "Mount:           not mounted" in proc.stdout
    data = json.loads(run_rewind("status", "--json", check=True).stdout)
    by_dir = {p["workdir"]: p for p in data["projects"]}
    assert by_dir[str(live)]["size_bytes"] >= 50_000 > by_dir[str(stale)]["size_bytes"]
    assert by_dir[str(live)]["commits"] == by_dir[str(live)]["checkpoints"] == 5
    assert by_dir[str(orphan)]["exists"] is False
    assert data["total_size_bytes"] >= data["store_size_bytes"] > 50_000
    assert {"base", "legacy_size_bytes", "legacy_archives", "last_prune", "pre_v2_projects",
            "reclaimable_bytes"} <= set(data)
    assert by_dir[str(orphan)]["state"] == "deleted"
    assert by_dir[str(orphan)]["quarantine_until"] - by_dir[str(orphan)]["deleted_at"] == 7 * 86400


# -- prune ---------------------------------------------------------------------------------

def test_prune_refuses_without_terminal_or_force(run_rewind, store, layout, tmp_path):
    old = tmp_path / "old"
    checkpoint(store, old)
    age(layout, old, 30)
    line = one_line_error(run_rewind("prune"))
    assert "-f" in line and "1 project" in line
    assert exists(layout, old)


def test_prune_force_reports_counts(run_rewind, store, layout, tmp_path):
    old, gone, keep = tmp_path / "old", tmp_path / "d" / "gone", tmp_path / "keep"
    for wd in (old, gone, keep):
        checkpoint(store, wd, 2)
    (gone.parent / "sibling").mkdir()
    age(layout, old, 30)
    shutil.rmtree(gone)
    proc = run_rewind("prune", "-f", check=True)
    assert "Scanned:              3" in proc.stdout
    assert "Deleted orphan:       1" in proc.stdout
    assert "Deleted stale:        1" in proc.stdout
    assert "Bytes reclaimed:" in proc.stdout
    assert not exists(layout, old) and not exists(layout, gone) and exists(layout, keep)


def test_prune_flags_override_config(run_rewind, store, layout, tmp_path, home):
    (home / "config.yaml").write_text("checkpoints:\n  retention_days: 100\n")
    old, gone = tmp_path / "old", tmp_path / "d" / "gone"
    checkpoint(store, old)
    checkpoint(store, gone)
    age(layout, old, 30)
    shutil.rmtree(gone)
    proc = run_rewind("prune", "--json", "-f", "--keep-orphans", check=True)
    report = json.loads(proc.stdout)
    assert (report["deleted_stale"], report["deleted_orphan"]) == (0, 0)
    report = json.loads(run_rewind("prune", "--json", "-f", "--retention-days", "10",
                                   "--keep-orphans", check=True).stdout)
    assert (report["deleted_stale"], report["deleted_orphan"]) == (1, 0)
    assert exists(layout, gone)


def test_prune_dry_run_changes_nothing(run_rewind, store, layout, tmp_path):
    old = tmp_path / "old"
    for i in range(6):
        (old / "blob.bin").parent.mkdir(exist_ok=True)
        (old / "blob.bin").write_bytes(os.urandom(300_000))
        take(store, old, f"big {i}")
    age(layout, old, 30)
    other = tmp_path / "other"
    for i in range(6):
        other.mkdir(exist_ok=True)
        (other / "blob.bin").write_bytes(os.urandom(300_000))
        take(store, other, f"big {i}")
    before = sorted(p.name for p in (layout.store / "objects").rglob("*"))
    proc = run_rewind("prune", "--dry-run", "--max-size-mb", "1", check=True)
    assert "stale" in proc.stdout and str(old) in proc.stdout
    assert "would drop the" in proc.stdout and "dry run: nothing changed" in proc.stdout
    assert exists(layout, old)
    assert sorted(p.name for p in (layout.store / "objects").rglob("*")) == before
    plan = json.loads(run_rewind("prune", "--dry-run", "--json", check=True).stdout)
    assert [p["workdir"] for p in plan["remove"]] == [str(old)]


def test_prune_with_nothing_to_remove_runs_without_terminal(run_rewind, store, tmp_path):
    checkpoint(store, tmp_path / "p")
    proc = run_rewind("prune", check=True)
    assert "no orphan or stale projects" in proc.stdout and "Deleted stale:        0" in proc.stdout


def test_prune_asks_and_removes_only_what_it_showed(home, store, layout, tmp_path):
    shown, later = tmp_path / "shown", tmp_path / "later"
    checkpoint(store, shown)
    checkpoint(store, later)
    age(layout, shown, 30)
    term = Terminal(home, tmp_path, "prune")
    term.read_until("remove these 1 project(s)")
    age(layout, later, 30)  # became stale while the question was on screen
    term.answer("y")
    assert term.finish() == 0, term.output
    assert "Deleted stale:        1" in term.output
    assert not exists(layout, shown) and exists(layout, later)


def test_prune_declined_changes_nothing(home, store, layout, tmp_path):
    old = tmp_path / "old"
    checkpoint(store, old)
    age(layout, old, 30)
    term = Terminal(home, tmp_path, "prune")
    term.read_until("[y/N]")
    term.answer("n")
    assert term.finish() == 1
    assert "cancelled" in term.output and exists(layout, old)


# -- clear and clear-legacy ----------------------------------------------------------------

def test_clear(run_rewind, store, layout, tmp_path, home):
    checkpoint(store, tmp_path / "p", 2)
    line = one_line_error(run_rewind("clear"))
    assert "-f" in line and layout.base.exists()
    proc = run_rewind("clear", "-f", check=True)
    assert "cleared" in proc.stdout and not layout.base.exists()
    assert "nothing to clear" in run_rewind("clear", "-f", check=True).stdout
    assert run_rewind("checkpoint", tmp_path / "p", check=True).returncode == 0


def test_clear_asks_on_a_terminal(home, store, layout, tmp_path):
    checkpoint(store, tmp_path / "p")
    term = Terminal(home, tmp_path, "clear")
    term.read_until("delete all checkpoint history?")
    term.answer("n")
    assert term.finish() == 1 and layout.base.exists()
    term = Terminal(home, tmp_path, "clear")
    term.read_until("delete all checkpoint history?")
    term.answer("y")
    assert term.finish() == 0 and not layout.base.exists()


def test_clear_unmounts_first(run_rewind, store, layout, tmp_path, home, fuse_usable):
    checkpoint(store, tmp_path / "p")
    mnt = home / "mnt"
    try:
        run_rewind("mount", check=True)  # the default mountpoint
        assert os.path.ismount(mnt)
        assert "mounted" in run_rewind("status", check=True).stdout.split("Mount:")[1]
        proc = run_rewind("clear", "-f", check=True)
        assert f"unmounted {mnt}" in proc.stdout
        assert not os.path.ismount(mnt) and not layout.base.exists()
    finally:
        force_unmount(mnt)


def test_clear_legacy(run_rewind, store, layout, tmp_path):
    assert "no legacy archives" in run_rewind("clear-legacy", check=True).stdout
    checkpoint(store, tmp_path / "p")
    v1 = layout.base / "0123456789abcdef"
    v1.mkdir()
    (v1 / "HEAD").write_text("ref: refs/heads/master\n")
    (v1 / "objects").mkdir()
    (v1 / "HERMES_WORKDIR").write_text(str(tmp_path / "p"))
    shadowrepos.migrate(layout)
    assert len(legacy.archives(layout)) == 1
    one_line_error(run_rewind("clear-legacy"))
    assert len(legacy.archives(layout)) == 1
    proc = run_rewind("clear-legacy", "-f", check=True)
    assert "deleted 1 archive(s)" in proc.stdout and legacy.archives(layout) == []
    assert (layout.store / "HEAD").exists()


def test_status_without_git_still_reports(run_rewind, store, tmp_path):
    checkpoint(store, tmp_path / "p", 2)
    proc = run_rewind("status", env={"PATH": str(tmp_path / "no-git-here")}, check=True)
    row = next(line.split() for line in proc.stdout.splitlines() if str(tmp_path / "p") in line)
    # The bytes it alone holds come from the history records: no git needed for them.
    assert row[1] == "2" and row[-2] in ("B", "KiB") and row[-1] == "live"
