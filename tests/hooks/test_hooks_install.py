"""`rewind hooks install|uninstall|status`: merged into what the user has, idempotent, and
byte-clean when taken out again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import rewind_env

from rewindfs.hooks.payloads import AGENTS

USER_FILES = {
    "claude-code": (".claude/settings.json",
                    '{\n    "model": "opus",\n    "hooks": {\n        "PreToolUse": [\n'
                    '            {"matcher": "Read", "hooks": [{"type": "command", '
                    '"command": "my-audit"}]}\n        ],\n        "Stop": []\n    },\n'
                    '    "env": {"A": "\\u00e9"}\n}'),
    "codex": (".codex/hooks.json", '{"hooks": {"SessionStart": [{"hooks": [{"type": '
                                   '"command", "command": "greet"}]}]}}\n'),
    "gemini": (".gemini/settings.json", '{\n\t"theme": "Dracula",\n\t"hooks": {}\n}\n'),
    "cursor": (".cursor/hooks.json", '{"version": 1, "hooks": {"afterFileEdit": '
                                     '[{"command": "fmt"}]}}'),
    "opencode": (".config/opencode/opencode.json", '{"theme": "x"}\n'),
    "kilo": (".config/kilo/kilo.json", '{"theme": "y"}\n'),
}
HOOK_FILES = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json",
              "gemini": ".gemini/settings.json", "cursor": ".cursor/hooks.json",
              "opencode": ".config/opencode/plugin/rewindfs.js",
              "kilo": ".config/kilo/plugin/rewindfs.js"}


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"/",
                                       p.stat().st_mode)
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("agent", AGENTS)
def test_install_merges_is_idempotent_and_uninstall_is_byte_clean(agent: str, user) -> None:
    name, text = USER_FILES[agent]
    path = user.home / name
    path.parent.mkdir(parents=True)
    path.write_text(text)
    os.chmod(path, 0o640)
    before = snapshot(user.home)
    out = user("hooks", "install", agent).stdout
    assert f"{agent}: installed in" in out
    hook_file = user.home / HOOK_FILES[agent]
    installed = hook_file.read_bytes()
    assert f"-m rewindfs.hooks {agent}".encode() in installed
    if hook_file == path:
        merged = json.loads(installed)
        original = json.loads(text)
        for key in original:   # every key of the user's is still there
            assert key in merged
        for event, entries in (original.get("hooks") or {}).items():
            assert merged["hooks"][event][: len(entries)] == entries
        assert path.stat().st_mode & 0o777 == 0o640
    if agent == "codex":
        assert "trust" in out and "/hooks" in out
    assert "already installed" in user("hooks", "install", agent).stdout
    assert hook_file.read_bytes() == installed
    status = json.loads(user("hooks", "status", "--json").stdout)
    row = next(r for r in status["agents"] if r["agent"] == agent)
    assert row["installed"] and row["path"] == str(hook_file)
    # Codex runs it once the user trusts it (tests/hooks/test_hooks_codex_trust.py).
    assert row["active"] == (agent != "codex")
    assert row["codex_trust"] == ("untrusted" if agent == "codex" else None)
    user("hooks", "uninstall", agent)
    assert snapshot(user.home) == before
    assert "not installed" in user("hooks", "uninstall", agent).stdout


PROJECT_FILES = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json",
                 "gemini": ".gemini/settings.json", "cursor": ".cursor/hooks.json",
                 "opencode": ".opencode/plugin/rewindfs.js", "kilo": ".kilo/plugin/rewindfs.js"}


@pytest.mark.parametrize("agent", AGENTS)
def test_project_install_is_idempotent_and_byte_clean(agent: str, user, tmp_path: Path) -> None:
    project = tmp_path / "app"
    hook_file = project / PROJECT_FILES[agent]
    hook_file.parent.mkdir(parents=True)
    (project / "main.py").write_text("print('hi')\n")
    if hook_file.suffix == ".json":   # the project's own config, with its own hooks
        hook_file.write_text(USER_FILES[agent][1])
    else:                             # another plugin in the folder
        (hook_file.parent / "theirs.js").write_text("export const Theirs = async () => ({});\n")
    before, home_before = snapshot(project), snapshot(user.home)
    out = user("hooks", "install", agent, "--project", str(project)).stdout
    assert f"{agent}: installed in {hook_file}" in out
    installed = hook_file.read_bytes()
    assert f"-m rewindfs.hooks {agent}".encode() in installed
    assert "already installed" in user("hooks", "install", agent, "--project",
                                       str(project)).stdout
    assert hook_file.read_bytes() == installed
    status = json.loads(user("hooks", "status", "--json", "--project", str(project)).stdout)
    row = next(r for r in status["agents"] if r["agent"] == agent)
    assert row["installed"] and row["path"] == str(hook_file)
    assert snapshot(user.home) == home_before   # the user-level config untouched
    user("hooks", "uninstall", agent, "--project", str(project))
    assert snapshot(project) == before


@pytest.mark.parametrize("agent", AGENTS)
def test_install_into_nothing_and_uninstall_leaves_nothing(agent: str, user) -> None:
    user("hooks", "install", agent)
    assert (user.home / HOOK_FILES[agent]).exists()
    user("hooks", "uninstall", agent)
    assert snapshot(user.home) == {}


def test_uninstall_after_user_edits_removes_only_ours(user) -> None:
    path = user.home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "opus"}\n')
    user("hooks", "install", "claude-code")
    data = json.loads(path.read_text())
    data["theme"] = "dark"
    data["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [
        {"type": "command", "command": "mine"}]})
    path.write_text(json.dumps(data, indent=2) + "\n")
    user("hooks", "uninstall", "claude-code")
    assert json.loads(path.read_text()) == {"model": "opus", "theme": "dark", "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "mine"}]}]}}


def test_project_level_install(user, tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    out = user("hooks", "install", "codex", "--project", str(project)).stdout
    assert f'[projects."{project}"]' in out and "/hooks" in out   # both trusts Codex needs
    user("hooks", "uninstall", "codex", "--project", str(project))
    out = user("hooks", "install", "gemini", "--project", str(project)).stdout
    assert str(project / ".gemini" / "settings.json") in out
    settings = json.loads((project / ".gemini" / "settings.json").read_text())
    assert {"BeforeTool", "BeforeAgent"} <= set(settings["hooks"])
    assert not (user.home / ".gemini").exists()
    user("hooks", "uninstall", "gemini", "--project", str(project))
    assert list(project.iterdir()) == []


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": [1]}'])
def test_a_config_it_cannot_read_is_left_alone(content: str, user) -> None:
    path = user.home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(content)
    done = user("hooks", "install", "claude-code", check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("rewind: ") and len(done.stderr.splitlines()) == 1
    assert path.read_text() == content


def test_bad_usage(user) -> None:
    done = user("hooks", "install", "vim", check=False)
    assert done.returncode == 2 and "vim" in done.stderr
    done = user("hooks", "install", "codex", "--project", "/nonexistent/x", check=False)
    assert done.returncode == 1 and done.stderr.startswith("rewind: not a directory")


def test_status_reports_last_error_and_checkpoint(user, home: Path, project: Path) -> None:
    user("hooks", "install", "claude-code")
    env = {"HERMES_HOME": str(home), "HOME": str(user.home), "PATH": "/usr/bin:/bin",
           "REWIND_HOOK_HELPER": "0"}
    subprocess.run([sys.executable, "-m", "rewindfs.hooks", "claude-code"], input=b"{oops",
                   env=env, check=True, timeout=60)
    out = user("hooks", "status").stdout
    assert "claude-code  active" in out and "payload is not JSON" in out
    assert f"log: {home / 'rewind-hooks' / 'hook.log'}" in out


def test_harmless_path_imports_neither_store_nor_cli(tmp_path: Path) -> None:
    code = ("import io, json, sys\n"
            "sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps({'cwd': '/tmp', "
            "'hook_event_name': 'PreToolUse', 'tool_name': 'Bash', 'session_id': 's', "
            "'tool_input': {'command': 'ls -la | grep x'}}).encode()))\n"
            "from rewindfs.hooks.entry import main\n"
            "assert main(['claude-code']) == 0\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pygit2', 'click', 'rich', 'yaml') or m.startswith('rewindfs.store'))\n"
            "print(json.dumps(heavy))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=rewind_env(tmp_path, tmp_path / "user-home"), timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
