"""`rewind hooks install|uninstall AGENT --mcp`: rewindfs's MCP server in each agent's own MCP
configuration, byte-exact as the hooks (an untouched install undone to the very bytes,
the file's other keys and style kept, a second install a no-op), symlinks and other
users' files kept as hooks/configfile keeps them, a server of the user's named `rewind`
left alone; and the real agent CLIs list the installed server (and, where their `mcp list`
checks it, connect to it: a real `rewind mcp` answering them)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import tomllib
from pathlib import Path

import pytest
from agentsim import ModelServer
from agentsim.clis import BINARIES, Agent, binary, missing

AGENTS = ["claude-code", "codex", "gemini", "cursor", "opencode", "kilo"]
# Where each agent keeps its MCP servers (the user-level file), under HOME.
FILES = {"claude-code": ".claude.json", "codex": ".codex/config.toml",
         "gemini": ".gemini/settings.json", "cursor": ".cursor/mcp.json",
         "opencode": ".config/opencode/opencode.json", "kilo": ".config/kilo/kilo.json"}
PROJECT_FILES = {"claude-code": ".mcp.json", "codex": ".codex/config.toml",
                 "gemini": ".gemini/settings.json", "cursor": ".cursor/mcp.json",
                 "opencode": ".opencode/opencode.json", "kilo": ".kilo/kilo.json"}
# What the person's file held before: their own keys (and a server of theirs), in a style
# of theirs (4 spaces, no final newline), which must come back byte for byte.
THEIRS_JSON = (b'{\n    "theme": "dark",\n    "mcpServers": {\n        "docs": {"command": '
               b'"docs-mcp"}\n    },\n    "mcp": {\n        "docs": {"type": "local", '
               b'"command": ["docs-mcp"]}\n    }\n}')
THEIRS_TOML = b'model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n\n[tui]\nx = 1\n'


def servers(agent: str, raw: bytes) -> dict:
    if agent == "codex":
        return tomllib.loads(raw.decode())["mcp_servers"]
    return json.loads(raw)["mcp" if agent in ("opencode", "kilo") else "mcpServers"]


def argv(agent: str, entry: dict) -> list[str]:
    command = entry["command"]
    return command if isinstance(command, list) else [command, *entry["args"]]


@pytest.mark.parametrize("agent", AGENTS)
def test_install_then_uninstall_gives_back_the_very_bytes(agent: str, user) -> None:
    path = user.home / FILES[agent]
    path.parent.mkdir(parents=True, exist_ok=True)
    before = THEIRS_TOML if agent == "codex" else THEIRS_JSON
    path.write_bytes(before)

    out = user("hooks", "install", agent, "--mcp").stdout
    assert "read-only" in out and str(path) in out
    found = servers(agent, path.read_bytes())
    assert set(found) == {"docs", "rewind"}, found   # theirs kept, ours added
    started = argv(agent, found["rewind"])
    assert started[0] == os.path.realpath(started[0]) or os.path.exists(started[0])
    assert started[-3:] == ["-m", "rewindfs.cli", "mcp"] and "--allow-restore" not in started
    written = path.read_bytes()
    if agent != "codex":
        assert written.startswith(b'{\n    "theme"') and not written.endswith(b"\n")
    assert "already installed" in user("hooks", "install", agent, "--mcp").stdout
    assert path.read_bytes() == written

    user("hooks", "install", agent, "--mcp", "--allow-restore")   # changed mind: allowed
    assert argv(agent, servers(agent, path.read_bytes())["rewind"])[-1] == "--allow-restore"
    assert "restores allowed" in user("hooks", "status").stdout

    user("hooks", "uninstall", agent, "--mcp")
    assert path.read_bytes() == before


@pytest.mark.parametrize("agent", AGENTS)
def test_a_file_install_made_goes_with_its_folders(agent: str, user, tmp_path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    user("hooks", "install", agent, "--mcp", "--project", str(project))
    path = project / PROJECT_FILES[agent]
    entry = servers(agent, path.read_bytes())["rewind"]
    assert argv(agent, entry)[-2:] == ["-C", str(project)]   # this project's server
    user("hooks", "uninstall", agent, "--mcp", "--project", str(project))
    assert list(project.iterdir()) == []
    assert "not installed" in user("hooks", "uninstall", agent, "--mcp", "--project",
                                   str(project)).stdout


@pytest.mark.parametrize("agent", AGENTS)
def test_a_file_changed_since_keeps_the_change(agent: str, user) -> None:
    """The agent (or the person) rewrote the file after install: uninstall takes out only
    rewindfs's server."""
    path = user.home / FILES[agent]
    user("hooks", "install", agent, "--mcp")
    raw = path.read_bytes()
    if agent == "codex":
        path.write_bytes(b'model = "o3"\n' + raw)
    else:
        data = json.loads(raw)
        data["theme"] = "light"
        path.write_text(json.dumps(data, indent=2))
    out = user("hooks", "uninstall", agent, "--mcp").stdout
    assert "the rest of the file as you left it" in out
    left = path.read_bytes()
    if agent == "codex":
        assert tomllib.loads(left.decode()) == {"model": "o3"} and b"rewindfs" not in left
    else:
        assert json.loads(left) == {"theme": "light"}


def test_hooks_and_mcp_server_share_geminis_settings(user) -> None:
    """Gemini CLI keeps both in settings.json: each install has its own record, so either
    order of uninstall leaves the file as the person had it."""
    path = user.home / ".gemini" / "settings.json"
    path.parent.mkdir()
    before = b'{\n  "theme": "dark"\n}\n'
    for order in (("--mcp", None), (None, "--mcp")):
        path.write_bytes(before)
        user("hooks", "install", "gemini")
        user("hooks", "install", "gemini", "--mcp")
        data = json.loads(path.read_text())
        assert "rewind" in data["mcpServers"] and data["hooks"]["BeforeTool"]
        for flag in order:
            user("hooks", "uninstall", "gemini", *([flag] if flag else []))
        assert path.read_bytes() == before, order


def test_a_server_of_theirs_named_rewind_is_left_alone(user) -> None:
    path = user.home / ".claude.json"
    before = b'{"mcpServers": {"rewind": {"command": "their-rewind"}}}'
    path.write_bytes(before)
    refused = user("hooks", "install", "claude-code", "--mcp", check=False)
    assert refused.returncode != 0 and "not rewindfs's" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1
    assert "not installed" in user("hooks", "uninstall", "claude-code", "--mcp").stdout
    assert path.read_bytes() == before


def test_allow_restore_needs_mcp(user) -> None:
    said = user("hooks", "install", "claude-code", "--allow-restore", check=False)
    assert said.returncode == 2 and "--mcp" in said.stderr
    assert list(user.home.iterdir()) == []


def test_a_symlinked_config_stays_a_symlink(user) -> None:
    dotfiles = user.home / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    real.write_text('{\n  "theme": "dark"\n}\n')
    os.chmod(real, 0o600)
    link = user.home / ".claude.json"
    link.symlink_to("dotfiles/claude.json")
    before = real.read_bytes()
    user("hooks", "install", "claude-code", "--mcp")
    assert link.is_symlink() and "rewind" in json.loads(real.read_text())["mcpServers"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    user("hooks", "uninstall", "claude-code", "--mcp")
    assert link.is_symlink() and real.read_bytes() == before
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude.json"]


def test_another_users_config_is_refused_then_kept_theirs(run_rewind) -> None:
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root and runuser to act as user nobody")
    home = Path(tempfile.mkdtemp(prefix="rewind-theirs-", dir="/tmp"))
    try:
        os.chmod(home, 0o755)
        nobody = pwd.getpwnam("nobody")
        path = home / ".cursor" / "mcp.json"
        path.parent.mkdir()
        path.write_text('{"mcpServers": {}}\n')
        for made in (path.parent, path):
            os.chown(made, nobody.pw_uid, nobody.pw_gid)
        before = path.read_bytes()
        env = {"HOME": str(home)}
        refused = run_rewind("hooks", "install", "cursor", "--mcp", env=env)
        assert refused.returncode == 1 and "--allow-other-owner" in refused.stderr
        assert path.read_bytes() == before
        run_rewind("hooks", "install", "cursor", "--mcp", "--allow-other-owner", env=env,
                   check=True)
        assert path.stat().st_uid == nobody.pw_uid and "rewind" in path.read_text()
        run_rewind("hooks", "uninstall", "cursor", "--mcp", "--allow-other-owner", env=env,
                   check=True)
        assert path.read_bytes() == before and path.stat().st_uid == nobody.pw_uid
    finally:
        shutil.rmtree(home, ignore_errors=True)


# What each agent's own `mcp list` says of a server it started and initialized (Codex
# lists its servers without starting them).
CONNECTED = {"claude-code": "Connected", "gemini": "Connected", "opencode": "connected",
             "kilo": "connected", "codex": "enabled"}


@pytest.mark.long
@pytest.mark.parametrize("agent", sorted(BINARIES))
def test_the_agent_lists_the_installed_server(agent: str, tmp_path: Path, home: Path,
                                              run_rewind) -> None:
    if binary(agent) is None:
        pytest.skip(missing(agent))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    with ModelServer([], project=str(project)) as srv:
        session = Agent(agent, tmp_path / "agent-home", project, srv)
        env = session.env()
        run_rewind("hooks", "install", agent, "--mcp",
                   env={k: v for k, v in env.items()
                        if k in ("HOME", "XDG_CONFIG_HOME", "CODEX_HOME")}, check=True)
        listed = subprocess.run([str(binary(agent)), "mcp", "list"], cwd=project, env=env,
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=180)
        assert not srv.stray(), srv.stray()
    said = listed.stdout + listed.stderr
    line = next((x for x in said.splitlines() if "rewind" in x and "rewindfs.cli" not in x
                 or "rewind:" in x or x.startswith("rewind ")), "")
    assert "rewind" in said and "rewindfs.cli mcp" in said, said
    assert CONNECTED[agent] in said, said
    assert "failed" not in line.lower(), said
