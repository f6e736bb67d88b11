"""Hooks that exist are found (issue 47): `rewind hooks status`, `rewind hooks uninstall` and
`rewind doctor` work from the install records (every config file ever written), not from
the variables of today's environment: a hook installed with CLAUDE_CONFIG_DIR,
XDG_CONFIG_HOME, CODEX_HOME or GEMINI_CLI_HOME set is found, reported (also when the Python
it runs is gone) and taken out without them; `rewind doctor` says when a hook's last run
failed. And Gemini CLI's settings.json, which holds
both the hook and the MCP server, comes back byte for byte in either uninstall order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookproc import claude_payload, hook_env, run_hook

USER_FILE = '{\n  "theme": "dark",\n  "general": {"vim": true}\n}\n'
# agent: (its variable, the value's folder under the test's tmp_path, the file in it)
MOVED = {
    "claude-code": ("CLAUDE_CONFIG_DIR", "claude-config", "settings.json"),
    "codex": ("CODEX_HOME", "codex-home", "hooks.json"),
    "gemini": ("GEMINI_CLI_HOME", "gemini-home", ".gemini/settings.json"),
    "opencode": ("XDG_CONFIG_HOME", "xdg", "opencode/plugin/rewindfs.js"),
    "kilo": ("XDG_CONFIG_HOME", "xdg", "kilo/plugin/rewindfs.js"),
}


def rows(run_rewind, env: dict[str, str]) -> list[dict]:
    status = json.loads(run_rewind("hooks", "status", "--json", env=env, check=True).stdout)
    return status["agents"]


@pytest.mark.parametrize("agent", sorted(MOVED))
def test_a_hook_installed_under_the_agents_variable_is_found_without_it(
        agent: str, run_rewind, tmp_path: Path) -> None:
    variable, folder, rel = MOVED[agent]
    home = tmp_path / "home"
    home.mkdir()
    moved = tmp_path / folder
    config = moved / rel
    if not rel.endswith(".js"):   # a file of the user's, for install to merge into
        config.parent.mkdir(parents=True)
        config.write_text(USER_FILE)
    before = config.read_bytes() if config.exists() else None
    plain = {"HOME": str(home)}
    run_rewind("hooks", "install", agent, env={**plain, variable: str(moved)}, check=True)
    assert config.exists() and config.read_bytes() != before

    # Without the variable: status names the file and says the hook is active.
    found = [r for r in rows(run_rewind, plain) if r["agent"] == agent and
             r["path"] == str(config)]
    assert found and found[0]["installed"], rows(run_rewind, plain)
    # (Codex runs a hook once it is trusted in its /hooks: not yet, says status)
    assert found[0]["active"] or agent == "codex" and found[0]["codex_trust"] != "trusted", \
        found
    shown = run_rewind("hooks", "status", env=plain, check=True).stdout
    assert str(config) in shown, shown
    # ... and uninstall takes it out, the file back as it was.
    done = run_rewind("hooks", "uninstall", agent, env=plain, check=True)
    assert str(config) in done.stdout, done.stdout
    assert (config.read_bytes() if config.exists() else None) == before
    assert not [r for r in rows(run_rewind, plain) if r["path"] == str(config)
                and r["installed"]]


def test_a_hook_whose_python_is_gone_is_reported_without_the_variable(run_rewind,
                                                                       tmp_path: Path):
    """Installed with CLAUDE_CONFIG_DIR by a rewind whose environment was removed since:
    doctor fails (exit 1) naming the file and the fix, `hooks status` says why."""
    home, moved = tmp_path / "home", tmp_path / "claude-config"
    home.mkdir()
    plain = {"HOME": str(home)}
    run_rewind("hooks", "install", "claude-code", env={**plain, "CLAUDE_CONFIG_DIR":
                                                       str(moved)}, check=True)
    settings = moved / "settings.json"
    data = json.loads(settings.read_text())
    hook = data["hooks"]["PreToolUse"][0]["hooks"][0]
    gone = tmp_path / "removed-tool" / "bin" / "python"
    hook["command"] = hook["command"].replace(hook["command"].split()[0], str(gone), 1)
    settings.write_text(json.dumps(data))

    done = run_rewind("doctor", "--json", env=plain)
    assert done.returncode == 1, done.stdout
    failing = [c for c in json.loads(done.stdout)["checks"] if c["status"] == "fail"]
    [row] = [c for c in failing if c["name"] == "claude-code"]
    assert str(settings) in row["detail"] and str(gone) in row["detail"], row
    assert "is gone" in row["detail"] and f"CLAUDE_CONFIG_DIR={moved}" in row["fix"], row
    [mine] = [r for r in rows(run_rewind, plain) if r["path"] == str(settings)]
    assert mine["installed"] and not mine["active"] and "is gone" in mine["problem"]
    assert mine["python"] == str(gone)


def test_records_of_older_installs_name_no_agent_and_are_found(run_rewind, tmp_path: Path,
                                                               home: Path):
    """A record written before records named the agent: the agent is read from the file."""
    user, moved = tmp_path / "home", tmp_path / "claude-config"
    user.mkdir()
    plain = {"HOME": str(user)}
    run_rewind("hooks", "install", "claude-code", env={**plain, "CLAUDE_CONFIG_DIR":
                                                       str(moved)}, check=True)
    [record] = (home / "rewind-hooks" / "installed").glob("*.json")
    data = json.loads(record.read_text())
    for key in ("agent", "project"):
        data.pop(key, None)
    record.write_text(json.dumps(data))
    assert [r for r in rows(run_rewind, plain) if r["path"] == str(moved / "settings.json")
            and r["agent"] == "claude-code" and r["active"]]
    run_rewind("hooks", "uninstall", "claude-code", env=plain, check=True)
    assert not (moved / "settings.json").exists()


@pytest.mark.parametrize("had_one", [True, False], ids=["a-users-file", "no-file"])
@pytest.mark.parametrize("first", ["hooks", "mcp"])
def test_gemini_settings_come_back_byte_for_byte_in_either_uninstall_order(
        first: str, had_one: bool, user, home: Path) -> None:
    settings = user.home / ".gemini" / "settings.json"
    if had_one:
        settings.parent.mkdir()
        settings.write_text(USER_FILE)
    user("hooks", "install", "gemini")
    user("hooks", "install", "gemini", "--mcp")
    both = json.loads(settings.read_text())
    assert both["hooks"] and both["mcpServers"]
    order = [[], ["--mcp"]] if first == "hooks" else [["--mcp"], []]
    for flags in order:
        user("hooks", "uninstall", "gemini", *flags)
    if had_one:
        assert settings.read_text() == USER_FILE
    else:   # install made the file and its folder: both gone again
        assert not settings.parent.exists()
    assert not list((home / "rewind-hooks" / "installed").glob("*.json"))


def test_doctor_says_a_hooks_last_run_failed(run_rewind, tmp_path: Path, home: Path,
                                             user_home: Path) -> None:
    """A hook whose last run failed with a store error: not "ok ... active"."""
    run_rewind("hooks", "install", "claude-code", check=True)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    (home / "checkpoints").write_text("not a folder\n")   # the store cannot be made
    run_hook("claude-code", claude_payload(project, "rm -rf build"), project,
             hook_env(home, HOME=str(user_home), REWIND_HOOK_HELPER="0"))
    log = (home / "rewind-hooks" / "hook.log").read_text()
    assert " claude-code error " in log, log   # the scenario: its last run failed
    done = run_rewind("doctor", "--json")
    [row] = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "claude-code"]
    assert row["status"] == "fail" and "last run failed" in row["detail"], row
    assert done.returncode == 1
    plain = run_rewind("doctor").stdout
    assert "ok    claude-code" not in plain, plain
