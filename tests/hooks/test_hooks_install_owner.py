"""`rewind hooks install|uninstall` touch only rewindfs's own entries and keep the file
the person's (issue 33, cases 4 and 5): a hook of theirs in a matcher group shared with
ours survives reinstall and uninstall; a symlinked settings file (a dotfiles repository)
stays a symlink, written through to its target; a file (or folder) another user owns is
refused with one line unless --allow-other-owner, and then stays theirs, mode included
(user nobody, as the second user, reads it afterwards)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

MINE = {"type": "command", "command": "my-audit --strict"}
NOBODY = ["runuser", "-u", "nobody", "--"]


def ours(entry) -> bool:
    return "-m rewindfs.hooks" in json.dumps(entry)


def test_their_hook_in_our_matcher_group_survives_reinstall_and_uninstall(user) -> None:
    path = user.home / ".claude" / "settings.json"
    user("hooks", "install", "claude-code")
    data = json.loads(path.read_text())
    [group] = data["hooks"]["PreToolUse"]
    group["hooks"].append(MINE)   # the person adds a hook of theirs to our group
    path.write_text(json.dumps(data, indent=2) + "\n")

    user("hooks", "install", "claude-code")
    groups = json.loads(path.read_text())["hooks"]["PreToolUse"]
    assert [h for g in groups for h in g["hooks"] if h == MINE] == [MINE]
    assert sum(ours(h) for g in groups for h in g["hooks"]) == 1

    out = user("hooks", "uninstall", "claude-code").stdout
    left = json.loads(path.read_text())
    assert left == {"hooks": {"PreToolUse": [{"matcher": group["matcher"], "hooks": [MINE]}]}}, \
        (out, left)


def test_their_hook_sharing_a_group_with_ours_in_their_own_file(user) -> None:
    """The file already had our hook and theirs in one group (written by hand, or by
    an older rewindfs): uninstall takes out ours and says the rest stayed, truly."""
    path = user.home / ".claude" / "settings.json"
    path.parent.mkdir()
    command = "/usr/bin/python3 -m rewindfs.hooks claude-code"
    path.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": command}, MINE]}]}},
        indent=2) + "\n")
    out = user("hooks", "uninstall", "claude-code").stdout
    assert "the rest of the file as you left it" in out
    assert json.loads(path.read_text()) == {"model": "opus", "hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [MINE]}]}}


def test_a_symlinked_settings_file_stays_a_symlink(user) -> None:
    dotfiles = user.home / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_text('{\n  "model": "opus"\n}\n')
    os.chmod(real, 0o640)
    link = user.home / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to("../dotfiles/claude-settings.json")
    before = real.read_bytes()

    user("hooks", "install", "claude-code")
    assert link.is_symlink() and os.readlink(link) == "../dotfiles/claude-settings.json"
    assert ours(json.loads(real.read_text())["hooks"])
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    user("hooks", "uninstall", "claude-code")
    assert link.is_symlink() and real.read_bytes() == before
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude-settings.json"]


@pytest.fixture
def their_home() -> Iterator[Path]:
    """A home user nobody can reach (in /tmp, 0755), with a .claude folder of theirs."""
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root and runuser to act as user nobody")
    home = Path(tempfile.mkdtemp(prefix="rewind-theirs-", dir="/tmp"))
    os.chmod(home, 0o755)
    (home / ".claude").mkdir(mode=0o755)
    nobody = pwd.getpwnam("nobody")
    os.chown(home / ".claude", nobody.pw_uid, nobody.pw_gid)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def as_nobody(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=60)


def look(path: Path) -> tuple[bytes, int, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def test_another_users_settings_are_refused_then_kept_theirs(their_home: Path,
                                                              run_rewind) -> None:
    settings = their_home / ".claude" / "settings.json"
    assert as_nobody("sh", "-c", f"umask 077; echo '{{\"model\": \"opus\"}}' > {settings}"
                     ).returncode == 0
    before = look(settings)
    assert before[1] != os.geteuid()   # the scenario: someone else's file

    def rewind(*args: str) -> subprocess.CompletedProcess:
        return run_rewind(*args, env={"HOME": str(their_home)})

    refused = rewind("hooks", "install", "claude-code")
    assert refused.returncode == 1 and refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1 and "--allow-other-owner" in refused.stderr
    assert "nobody" in refused.stderr
    assert look(settings) == before

    assert rewind("hooks", "install", "claude-code", "--allow-other-owner").returncode == 0
    data, uid, gid, mode = look(settings)
    assert (uid, gid, mode) == before[1:] and ours(json.loads(data)["hooks"])
    seen = as_nobody("cat", str(settings))   # still theirs to read
    assert seen.returncode == 0 and "rewindfs.hooks" in seen.stdout

    assert rewind("hooks", "uninstall", "claude-code").returncode == 1
    assert rewind("hooks", "uninstall", "claude-code", "--allow-other-owner").returncode == 0
    assert look(settings) == before


@pytest.mark.parametrize("agent,made", [("claude-code", ".claude/settings.json"),
                                        ("kilo", ".config/kilo/plugin/rewindfs.js")])
def test_a_new_file_in_another_users_folder_is_refused_then_theirs(
        agent: str, made: str, their_home: Path, run_rewind) -> None:
    """Into their .claude folder, and (Kilo) into folders install has to make there."""
    home = their_home / ".claude" if agent == "claude-code" else their_home / "k"
    if agent != "claude-code":   # a home of theirs, with no .config yet
        home.mkdir()
        os.chown(home, *(lambda u: (u.pw_uid, u.pw_gid))(pwd.getpwnam("nobody")))
    root = home.parent if agent == "claude-code" else home
    env = {"HOME": str(root)}
    before = sorted(home.rglob("*"))
    refused = run_rewind("hooks", "install", agent, env=env)
    assert refused.returncode == 1 and "--allow-other-owner" in refused.stderr
    assert sorted(home.rglob("*")) == before
    run_rewind("hooks", "install", agent, "--allow-other-owner", env=env, check=True)
    theirs = home.stat().st_uid
    assert theirs != os.geteuid()
    for path in [root / made, *(root / made).parents]:
        if path == root or root not in path.parents:
            break
        assert path.stat().st_uid == theirs, path   # the file and every folder made for it
    assert as_nobody("cat", str(root / made)).returncode == 0
