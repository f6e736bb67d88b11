"""`rewind` served by the resident process (rewindfs.resident): the same answers as a
command run in its own process, signals, the pager on a real terminal, a resident process
killed mid-command, an upgrade, many clients at once, and another user refused.

Every `rewind` here is a real exec of the console script; that a command was served is
shown by the resident process's own count (its `status` answer), not assumed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import PAUSE_RESTORE, REWIND, rewind_env, signal_when_paused, wait_for
from terminal import PtyProcess

from rewindfs.hooks import helper


def served_env(home: Path, user_home: Path, **extra: str) -> dict[str, str]:
    env = rewind_env(home, user_home, **extra)
    env.pop("REWIND_NO_SERVER", None)
    return env


def status(home: Path, env: dict[str, str]) -> dict:
    """The resident process's own account (how many commands it served)."""
    code = ("import json; from rewindfs.resident.source import ask; "
            "print(json.dumps(ask({'kind': 'status'})))")
    out = subprocess.run([os.path.join(os.path.dirname(REWIND), "python"), "-c", code],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout or "null") or {}


def rewind(args: list[str], cwd: Path, env: dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([REWIND, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, **kw)


class Served:
    """A project with a few checkpoints and a resident process up for its home."""

    def __init__(self, home: Path, project: Path, user_home: Path):
        self.home, self.project = home, project
        self.env = served_env(home, user_home)
        self.plain = rewind_env(home, user_home)   # REWIND_NO_SERVER=1: in its own process
        for i, text in enumerate(["one\n", "two\n", "three\n"]):
            (project / "notes.txt").write_text(text)
            (project / "src" / f"m{i}.py").write_text(f"value = {i}\n")
            assert rewind(["checkpoint", "-m", f"step {i}"], project, self.plain).returncode == 0
        (project / "notes.txt").write_text("four, not checkpointed\n")
        rewind(["status"], project, self.env)   # no resident process yet: it starts one
        wait_for(lambda: helper.running(home / "rewind-hooks") is not None,
                 "the resident process to start")
        wait_for(lambda: status(home, self.env).get("ok"), "the resident process to answer")

    def served(self) -> int:
        answer: dict = {}

        def asked() -> bool:   # (a status asked of a busy machine may time out: again)
            answer.update(status(self.home, self.env))
            return "served" in answer

        wait_for(asked, "the resident process's status")
        return answer["served"]

    def run(self, args: list[str], **kw) -> subprocess.CompletedProcess:
        before = self.served()
        proc = rewind(args, self.project, self.env, **kw)
        assert self.served() == before + 1, f"`rewind {' '.join(args)}` was not served"
        return proc


@pytest.fixture
def served(home: Path, project: Path, user_home: Path) -> Served:
    return Served(home, project, user_home)


READ_COMMANDS = [
    ["list"], ["list", "--json"], ["show", "1"], ["show", "2:notes.txt"],
    ["cat", "1", "notes.txt"], ["diff", "--stat"], ["diff", "3", "1"], ["diff", "1"],
    ["log", "notes.txt"], ["grep", "value", "1"], ["status"], ["status", "--json"],
    ["restore", "--dry-run", "2"], ["restore", "--dry-run", "1", "notes.txt"],
    ["config"], ["show", "99"], ["cat", "1", "missing.txt"], ["restore", "--bogus"],
    ["diff", "--stat", "not-a-ref"], ["--color", "always", "diff", "1"], ["nosuchcommand"],
]


def test_every_read_command_answers_as_in_its_own_process(served: Served) -> None:
    for args in READ_COMMANDS:
        here = rewind(args, served.project, served.plain)
        there = served.run(args)
        assert (there.returncode, _aged(there.stdout), _aged(there.stderr)) == \
               (here.returncode, _aged(here.stdout), _aged(here.stderr)), args
        assert there.stdout.count("\n") == here.stdout.count("\n")


WRITE_COMMANDS = [
    ["checkpoint", "-m", "by hand"], ["checkpoint"], ["restore", "2", "notes.txt", "-y"],
    ["undo"], ["restore", "3", "-y"], ["undo"], ["label", "1", "keep"],
    ["list"], ["delete", "keep", "-y"], ["restore", "99", "-y"], ["prune", "--dry-run"],
]


def test_every_write_command_does_what_it_does_in_its_own_process(
        served: Served, tmp_path: Path) -> None:
    """The same commands from the same start, once served and once each in its own
    process (the project and its store put back in between): the same output (ids and
    ages aside: the checkpoints are taken at other moments), the same files, the same
    checkpoints."""
    saved = tmp_path / "saved"
    saved.mkdir()
    pairs = [(served.project, saved / "project"),
             (served.home / "checkpoints", saved / "checkpoints")]
    for live, copy in pairs:
        subprocess.run(["cp", "-a", str(live), str(copy)], check=True)
    there = [served.run(args) for args in WRITE_COMMANDS]
    files, history = _tree(served.project), _history(served.project, served.plain)
    for live, copy in pairs:
        shutil.rmtree(live)
        subprocess.run(["cp", "-a", str(copy), str(live)], check=True)
    here = [rewind(args, served.project, served.plain) for args in WRITE_COMMANDS]
    for args, a, b in zip(WRITE_COMMANDS, there, here, strict=True):
        assert (a.returncode, _normalized(a.stdout), _normalized(a.stderr)) == \
               (b.returncode, _normalized(b.stdout), _normalized(b.stderr)), args
    assert _tree(served.project) == files
    assert _history(served.project, served.plain) == history


def _aged(text: str) -> str:
    """`text` with its ages and sizes said alike, and its columns' padding (a second
    passes between two runs; a cache one of them wrote counts in the store's size)."""
    text = re.sub(r"\d+ ?(s|sec|seconds?|m|min|minutes?|h) ago|just now|\bnow\b|next in \d+h",
                  "<age>", text)
    text = re.sub(r"\d+(\.\d+)? (B|KiB|MiB)\b", "<size>", text)
    return re.sub(r"[ \t]+", " ", text)


def _normalized(text: str) -> str:
    """`text` with its ids and sizes said alike too (commits of other moments: other ids,
    other compressed sizes)."""
    return _aged(re.sub(r"\b[0-9a-f]{8,40}\b", "<id>", text))


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _history(project: Path, env: dict[str, str]) -> list[tuple]:
    rows = json.loads(rewind(["list", "--json"], project, env).stdout)
    return [(_normalized(r["reason"]), r["files_changed"], r["insertions"], r["deletions"],
             r["pre_rollback"], r["labels"]) for r in rows]


def test_ctrl_c_mid_restore_keeps_the_restores_own_rules(served: Served) -> None:
    """Ctrl-C reaches the served restore (paused midway by its test hook): it stops as
    in its own process (exit 130, one line), and `rewind undo` brings back its
    pre-rollback state."""
    bulk = {f"bulk/f{i:03d}.txt": f"v1 {i}\n" for i in range(200)}
    for rel, text in bulk.items():
        (served.project / rel).parent.mkdir(exist_ok=True)
        (served.project / rel).write_text(text)
    assert served.run(["checkpoint", "-m", "v1"]).returncode == 0
    for rel in bulk:
        (served.project / rel).write_text("v2\n")
    before = _tree(served.project)
    count = served.served()
    proc = subprocess.Popen([REWIND, "restore", "1", "-y"], cwd=served.project,
                            env={**served.env, PAUSE_RESTORE: "100"},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    paused, code, out, err = signal_when_paused(proc, signal.SIGINT)
    assert paused, (code, out, err)
    assert served.served() == count + 1   # it was the resident process's child that paused
    assert code == 130, (code, out, err)
    assert err.strip().splitlines()[-1] == "rewind: interrupted", err
    assert "Traceback" not in err
    midway = _tree(served.project)
    assert midway != before, "the restore was stopped before it changed anything"
    assert served.run(["undo"]).returncode == 0
    assert _tree(served.project) == before


def test_ctrl_c_mid_grep(served: Served) -> None:
    """A served `rewind grep` over a long history, interrupted once it has printed its
    first match: it stops (exit 130, `rewind: interrupted`), printing no more."""
    big = served.project / "big.txt"
    for i in range(40):
        big.write_text("".join(f"line {j} needle {i}\n" for j in range(3000)))
        assert rewind(["checkpoint", "-m", f"big {i}"], served.project,
                      served.plain).returncode == 0
    count = served.served()
    proc = subprocess.Popen([REWIND, "grep", "needle"], cwd=served.project, env=served.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    assert b"needle" in first, first
    assert served.served() == count + 1
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=120)
    whole = rewind(["grep", "needle"], served.project, served.plain)
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.decode().strip().splitlines()[-1] == "rewind: interrupted"
    assert len(first + rest) < len(whole.stdout.encode()), "it printed everything: not mid-grep"


def test_pager_and_colour_on_a_terminal(served: Served) -> None:
    """A served `rewind log` long enough to page: the pager runs on the client's terminal
    (less, reading its keys there), colour as on any terminal; `q` ends both."""
    for i in range(60):
        (served.project / "notes.txt").write_text(f"edit {i}\n")
        rewind(["checkpoint", "-m", f"edit {i}"], served.project, served.plain)
    env = {**served.env, "PAGER": "less", "TERM": "xterm-256color"}
    env.pop("LESS", None)
    for _ in range(3):   # (a resident process too slow to answer: the client ran it itself)
        count = served.served()
        tty = PtyProcess([REWIND, "list"], cwd=served.project, env=env, rows=20, columns=100)
        tty.expect(r"edit 59")
        assert b"\x1b[" in tty.output   # colour, as on a terminal
        was_served = served.served() == count + 1
        tty.send("q")
        assert tty.wait() == 0
        if was_served:
            break
    assert was_served, "never served"
    assert b"edit 1 " not in tty.plain or tty.plain.count(b"edit") < 60, \
        "the whole list was printed: no pager"


def test_a_resident_process_killed_mid_command(served: Served) -> None:
    """Killed while a command runs: the client says so in one line; the next command
    works (and starts a new one)."""
    pid = helper.running(served.home / "rewind-hooks")
    proc = subprocess.Popen([REWIND, "restore", "1", "-y"], cwd=served.project,
                            env={**served.env, PAUSE_RESTORE: "1"}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = b""
    while b"rewind: test pause" not in said:
        chunk = os.read(proc.stderr.fileno(), 4096)
        assert chunk, f"it never paused: {said!r}"
        said += chunk
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert children, "the command is not the resident process's child"
    os.kill(pid, signal.SIGKILL)
    for child in children:
        try:
            os.kill(int(child), signal.SIGKILL)
        except ProcessLookupError:
            pass
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, (out, err)
    assert err.strip().splitlines()[-1] == ("rewind: the resident process stopped before the "
                                            "command finished; run it again")
    again = rewind(["list"], served.project, served.env)
    assert again.returncode == 0 and "step 2" in again.stdout, again.stderr


def test_an_upgrade_is_never_served_by_the_old_code(served: Served, tmp_path: Path) -> None:
    """A file the resident process loaded changes on disk (an upgrade in place): the next
    command runs in its own process, and the old resident process is gone."""
    old = helper.running(served.home / "rewind-hooks")
    import rewindfs.cli.commands.show as module

    path = Path(module.__file__)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    try:
        proc = rewind(["list"], served.project, served.env)
        assert proc.returncode == 0 and "step 2" in proc.stdout
        wait_for(lambda: helper.running(served.home / "rewind-hooks") != old,
                 "the old resident process to go")
    finally:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_ten_clients_at_once(served: Served) -> None:
    count = served.served()
    results: list[subprocess.CompletedProcess] = []

    def one(i: int) -> None:
        args = ["list"] if i % 2 else ["cat", "1", "notes.txt"]
        results.append(rewind(args, served.project, served.env))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [0] * 10, [r.stderr for r in results]
    assert served.served() == count + 10
    assert sum("three" in r.stdout for r in results) == 5


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
def test_another_user_is_refused(served: Served, tmp_path: Path) -> None:
    """Even with the resident process's folder and socket opened to everyone, a client of
    another user gets no command run: it runs its own, in its own process."""
    folder = served.home / "rewind-hooks"
    socket_path = folder / "helper.sock"
    os.chmod(served.home, 0o711)
    os.chmod(folder, 0o711)
    os.chmod(socket_path, 0o777)
    count = served.served()
    other_home = tmp_path / "nobody"
    other_home.mkdir()
    shutil.chown(other_home, "nobody")
    code = ("from rewindfs.resident import wire; import os; "
            "s = wire.connect(5); print('connected' if s else 'refused')")
    env = {**served.env, "HOME": str(other_home)}
    try:
        out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                              os.path.join(os.path.dirname(REWIND), "python"), "-c", code],
                             env=env, capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(folder, 0o700)
    # The folder is not nobody's alone: the client never even connects.
    assert out.stdout.strip() == "refused", out
    assert served.served() == count


def test_served_commands_keep_the_clients_cwd_and_environment(served: Served) -> None:
    """The client's working directory and environment (a setting) are the command's."""
    env = {**served.env, "REWIND_MAX_SNAPSHOTS": "7"}
    before = served.served()
    out = subprocess.run([REWIND, "config"], cwd=served.project / "src", env=env,
                         capture_output=True, text=True, timeout=60)
    assert served.served() == before + 1
    assert re.search(r"max_snapshots\W+7", out.stdout), out.stdout


def test_another_python_start_up_runs_in_its_own_process(served: Served) -> None:
    """A client whose Python starts otherwise than the resident process did (another
    locale, a PYTHON* setting): a fork would not be what an exec is, so it runs its own."""
    before = served.served()
    for extra in ({"LC_ALL": "C"}, {"PYTHONWARNINGS": "error"}):
        proc = rewind(["list"], served.project, {**served.env, **extra})
        assert proc.returncode == 0 and "step 2" in proc.stdout, proc.stderr
    assert served.served() == before
