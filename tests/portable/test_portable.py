"""Every Linux-only call of the core has a portable fallback, run here by turning the Linux
path off (REWIND_PORTABLE, rewindfs.portable), so the road to macOS is paved and tested
on Linux (issue 35).

The whole core under REWIND_PORTABLE=all, traced by strace: checkpoint, list, diff, a
restore that creates files and changes an executable bit, undo, a hook's checkpoint,
push and fetch; none of them opens /proc, makes a pidfd, renames with RENAME_NOREPLACE or
opens with O_PATH, and each still does its job. The same run without the switch does
all four (the trace can see them). Then each fallback on its own where its outcome
matters: a file saved during a restore kept by the hard-link placement, the exec bit
and the umask without O_PATH and /proc, the mount table from mount(8) with a real mount,
a lock holder's command line from ps(1), the helper reached by its socket's path, and
the hook with no helper at all (no fork).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REWIND, wait_for
from test_restore_helpers import checkpoint, manager, write

from rewindfs import portable
from rewindfs.hooks import helper
from rewindfs.hooks.agents import hook_command

# The hooks' and the restores' own test helpers (tests/hooks, tests/restore).
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("hooks", "restore")]
from hookproc import claude_payload, hook_env, log_lines, run_hook  # noqa: E402

STRACE = shutil.which("strace")
CALLS = "openat,open,pidfd_open,pidfd_send_signal,renameat2,execve,clone,clone3,fork,vfork"
LINUX_ONLY = {
    "/proc": re.compile(r'open(at)?\(.*"/proc/'),
    "pidfd": re.compile(r"\bpidfd_(open|send_signal)\("),
    "RENAME_NOREPLACE": re.compile(r"renameat2\(.*RENAME_NOREPLACE"),
    "O_PATH": re.compile(r"open(at)?\(.*O_PATH"),
}


def _traced(argv: list[str], cwd: Path, env: dict[str, str], log: Path,
            stdin: bytes | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([STRACE, "-f", "-qq", "-e", f"trace={CALLS}", "-o", str(log),
                           *argv], cwd=cwd, env=env, input=stdin or b"", capture_output=True,
                          timeout=300)
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return subprocess.CompletedProcess(done.args, 0, done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


def _python_lines(log: Path) -> list[str]:
    """The traced lines of rewindfs's own processes: git and ps, which the push and
    the fallbacks start, are other programs with their own ways (their threads too: a
    process or thread runs what its creator ran until it execs something else)."""
    lines = [(pid, _, rest.lstrip()) for pid, _, rest in
             (line.partition(" ") for line in log.read_text().splitlines())]
    execs: dict[str, list[tuple[int, str]]] = {}
    parent: dict[str, tuple[str, int]] = {}
    for i, (pid, _, rest) in enumerate(lines):
        found = re.match(r'execve\("([^"]+)"', rest)
        if found and "= -1" not in rest:   # (strace may split it: "<unfinished ...>")
            execs.setdefault(pid, []).append((i, found.group(1)))
        made = re.search(r"(?:clone3?|v?fork)(?:\(| resumed>).*= (\d+)$", rest)
        if made:
            parent[made.group(1)] = (pid, i)

    def program(pid: str, at: int) -> str:
        for i, exe in reversed(execs.get(pid, [])):
            if i <= at:
                return exe
        if pid in parent:
            return program(*parent[pid])
        return "python"   # the traced command itself, before its first exec

    return [f"{program(pid, i)}: {rest}" for i, (pid, _, rest) in enumerate(lines)
            if "python" in os.path.basename(program(pid, i))]


def _linux_only_calls(lines: list[str]) -> set[str]:
    return {name for name, pattern in LINUX_ONLY.items()
            if any(pattern.search(line) for line in lines)}


@pytest.mark.long
@pytest.mark.usefixtures("no_helper_left")
@pytest.mark.parametrize("switch", ["all", ""], ids=["portable", "linux"])
def test_the_core_runs_without_linux_only_calls(switch: str, tmp_path: Path, home: Path,
                                                project: Path, child_env) -> None:
    if STRACE is None:
        pytest.skip("strace is not installed (scripts/setup installs it)")
    env = child_env(REWIND_PORTABLE=switch, REWIND_HOOK_HELPER_IDLE="30")
    logs = iter(tmp_path / f"trace{i}.log" for i in range(100))
    lines: list[str] = []

    def rewind(*args: str) -> subprocess.CompletedProcess:
        log = next(logs)
        done = _traced([REWIND, *args], project, env, log)
        lines.extend(_python_lines(log))
        return done

    (project / "package.json").write_text("{}\n")
    (project / "run.sh").write_text("#!/bin/sh\n")
    (project / "run.sh").chmod(0o755)
    rewind("checkpoint", "-m", "first")
    (project / "run.sh").chmod(0o644)
    (project / "README.md").unlink()
    (project / "new.txt").write_text("new\n")
    assert "README.md" in rewind("diff", "1", "--stat").stdout
    rewind("restore", "1", "--yes")   # README.md created again, run.sh's x bit back
    assert (project / "README.md").read_text() == "# sample\n\nA sample project.\n"
    assert os.stat(project / "run.sh").st_mode & 0o100
    rewind("undo")
    assert not (project / "README.md").exists() and (project / "new.txt").exists()
    assert json.loads(rewind("list", "--json").stdout)[-1]["reason"] == "first"

    # A hook's checkpoint, twice: the second by the helper the first one started, where
    # there is one (untraced: strace would wait for that helper to end).
    env_hook = hook_env(home, REWIND_PORTABLE=switch, REWIND_HOOK_HELPER_IDLE="30")
    (project / "h1.txt").write_text("h1")
    run_hook("claude-code", claude_payload(project, "rm h1.txt", call="h1"), project, env_hook)
    if switch == "":
        wait_for(lambda: helper.running(home / "rewind-hooks") is not None,
                 "the helper to start")
    (project / "h2.txt").write_text("h2")
    log = next(logs)
    _traced(shlex.split(hook_command("claude-code")), project, env_hook, log,
            stdin=claude_payload(project, "rm h2.txt", call="h2"))
    lines.extend(_python_lines(log))
    reasons = [c["reason"] for c in json.loads(rewind("list", "--json").stdout)]
    assert reasons[:2] == ["before: rm h2.txt", "before: rm h1.txt"], reasons
    by_helper = "by the helper" in log_lines(home)[-1]
    assert by_helper == (switch == ""), log_lines(home)[-1]

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    rewind("remote", "add", "backup", str(remote))
    rewind("push", "backup")
    rewind("fetch", "backup")

    found = _linux_only_calls(lines)
    if switch:
        assert not found, (f"Linux-only calls with REWIND_PORTABLE=all: {found}",
                           [ln for ln in lines if any(p.search(ln) for p in LINUX_ONLY.values())])
    else:   # the trace sees each of them when the Linux paths are on
        assert found == set(LINUX_ONLY), found


# -- each fallback where its outcome matters ----------------------------------------------

def test_a_file_saved_during_a_restore_is_kept_without_renameat2(home, project, monkeypatch):
    import test_restore_appeared as appeared

    monkeypatch.setenv(portable.ENV, "renameat2")
    assert not portable.linux("renameat2") and portable.linux("pidfd")
    appeared.test_a_file_saved_meanwhile_is_kept_and_reported(manager(home), project)


@pytest.mark.parametrize("switch", ["o_path", "o_path,proc", "proc"])
def test_exec_bits_and_umask_without_o_path_and_proc(switch, home, project, child_env):
    mgr = manager(home)
    write(project, {"run.sh": "#!/bin/sh\n", "lib.sh": "x\n", "gone/deep.txt": "d\n"})
    (project / "run.sh").chmod(0o750)
    (project / "lib.sh").chmod(0o640)
    cp = checkpoint(mgr, project, "run executable, lib not")
    (project / "run.sh").chmod(0o640)
    (project / "lib.sh").chmod(0o751)
    shutil.rmtree(project / "gone")
    done = subprocess.run([REWIND, "restore", cp[:8], "--yes"], cwd=project,
                          env=child_env(REWIND_PORTABLE=switch), capture_output=True,
                          text=True, timeout=120, preexec_fn=lambda: os.umask(0o027))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(project / "run.sh").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(project / "lib.sh").st_mode) == 0o640
    # Recreated without a recorded mode: 0644 less the restore's umask (027), never wider.
    assert stat.S_IMODE(os.stat(project / "gone" / "deep.txt").st_mode) == 0o640


def test_the_mount_table_from_mount8_finds_a_real_mount(mount, monkeypatch):
    from rewindfs.store.objects import mounts

    point = os.fsencode(str(mount()))
    from_proc = mounts.rewindfs_mounts()
    monkeypatch.setenv(portable.ENV, "proc")
    from_mount = mounts.rewindfs_mounts()
    assert point in from_proc and point in from_mount   # the scenario: a live mount
    assert mounts.mounted_type(Path(os.fsdecode(point))) == mounts.REWINDFS_FSTYPE


def test_mount8_listings_of_linux_and_macos():
    from rewindfs.store.objects.mounts import REWINDFS_FSTYPE, listed_by_mount

    text = (b"/dev/sda1 on / type ext4 (rw,relatime)\n"
            b"rewindfs on /home/me/my mnt type fuse.rewindfs (ro,nosuid,nodev)\n"
            b"/dev/disk3s1 on /System/Volumes/Data (apfs, local, journaled)\n"
            b"rewindfs@macfuse0 on /Users/me/.hermes/mnt (macfuse, nodev, nosuid)\n")
    assert listed_by_mount(text) == [
        (b"/", "ext4"), (b"/home/me/my mnt", REWINDFS_FSTYPE),
        (b"/System/Volumes/Data", "apfs"), (b"/Users/me/.hermes/mnt", REWINDFS_FSTYPE)]


def test_a_lock_holders_command_line_from_ps(monkeypatch, tmp_path):
    from rewindfs.cli.output.feedback import _command

    proc = subprocess.Popen(["sleep", "60"])
    try:
        wait_for(lambda: Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"sleep"),
                 "sleep to be exec'd")
        linux = _command(proc.pid, ["checkpoint"])
        monkeypatch.setenv(portable.ENV, "proc")
        assert (linux, _command(proc.pid, ["checkpoint"])) == (" (sleep)", " (sleep)")
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.long
def test_the_helper_by_its_sockets_path_and_no_helper_without_fork(project):
    """Without /proc the hook reaches the helper by the socket's own path (a short home:
    a socket's path must stay under 104 bytes); without fork there is no helper: the hook
    checkpoints itself."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="rw", dir="/tmp"))
    hooks = home / "rewind-hooks"
    assert len(os.fsencode(str(hooks / "helper.sock"))) <= 103   # the scenario
    try:
        _helper_by_path_then_none(home, hooks, project)
    finally:
        from conftest import stop_hooks_helper

        stop_hooks_helper(home)
        shutil.rmtree(home, ignore_errors=True)


def _helper_by_path_then_none(home: Path, hooks: Path, project: Path) -> None:
    (project / "package.json").write_text("{}\n")
    env = hook_env(home, REWIND_PORTABLE="proc,pidfd", REWIND_HOOK_HELPER_IDLE="30")
    for call in ("p1", "p2"):
        (project / f"{call}.txt").write_text(call)
        run_hook("claude-code", claude_payload(project, f"rm {call}.txt", call=call), project,
                 env)
        if call == "p1":
            wait_for(lambda: helper.running(hooks) is not None, "the helper to start")
    assert "by the helper" in log_lines(home)[-1], log_lines(home)[-1]
    assert (hooks / "helper.sock").exists()
    helper.stop(hooks)
    wait_for(lambda: helper.running(hooks) is None, "the helper to stop")
    env = hook_env(home, REWIND_PORTABLE="fork")
    for call in ("f1", "f2"):
        (project / f"{call}.txt").write_text(call)
        run_hook("claude-code", claude_payload(project, f"rm {call}.txt", call=call), project,
                 env)
        assert "by the helper" not in log_lines(home)[-1]
        assert f"before: rm {call}.txt" in log_lines(home)[-1]
    assert helper.running(hooks) is None
