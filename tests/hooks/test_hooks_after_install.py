"""`rewind hooks install` writes the after events too (issue 45): each agent's hook runs
after a file-changing tool call as well as before it, so a change is known to be that
call's. An install by an older rewindfs (before events only) is named by `rewind hooks
status`, upgrades with a second install, and uninstall still puts back the user's bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import rewind_env
from test_hooks_install import HOOK_FILES, USER_FILES

from rewindfs.hooks.payloads import AGENTS

AFTER = {"claude-code": ["PostToolUse", "PostToolUseFailure"], "codex": ["PostToolUse"],
         "gemini": ["AfterTool"], "cursor": ["afterShellExecution", "postToolUse"]}
BEFORE = {"claude-code": ["PreToolUse"], "codex": ["PreToolUse"],
          "gemini": ["BeforeAgent", "BeforeTool"], "cursor": ["beforeShellExecution",
                                                              "preToolUse"]}

# What an older rewindfs wrote: the same install with its before events alone (its
# plugin had no tool.execute.after).
OLD_INSTALL = """
import dataclasses, sys
from rewindfs.hooks import install, plugin
agent, keep = sys.argv[1], sys.argv[2].split(",")
real, source = install.spec, plugin.source
def spec(agent, project=None):
    s = real(agent, project)
    return dataclasses.replace(s, events={e: v for e, v in s.events.items() if e in keep})
def old_source(agent, python):
    text = source(agent, python)
    return text[:text.index('    "tool.execute.after"')] + "  };\\n};\\n"
install.spec, plugin.source = spec, old_source
install.install(agent)
"""


def ours(entry: dict) -> bool:
    text = json.dumps(entry)
    return "-m rewindfs.hooks" in text


@pytest.mark.parametrize("agent", AGENTS)
def test_install_writes_the_after_events(agent: str, user) -> None:
    user("hooks", "install", agent)
    path = user.home / HOOK_FILES[agent]
    if agent in ("opencode", "kilo"):
        assert '"tool.execute.after"' in path.read_text()
        return
    table = json.loads(path.read_text())["hooks"]
    for event in BEFORE[agent] + AFTER[agent]:
        assert any(ours(e) for e in table[event]), (event, table)
    # The after hooks match the tools the before hooks do.
    assert [e.get("matcher") for e in table[AFTER[agent][-1]]] == \
        [e.get("matcher") for e in table[BEFORE[agent][-1]]]


@pytest.mark.parametrize("agent", AGENTS)
def test_an_older_install_is_named_and_upgrades_cleanly(agent: str, user, home: Path,
                                                       tmp_path: Path) -> None:
    name, text = USER_FILES[agent]
    hook_file = user.home / HOOK_FILES[agent]
    path = user.home / name
    path.parent.mkdir(parents=True)
    path.write_text(text)
    before = path.read_bytes()
    env = rewind_env(home, user.home)
    subprocess.run([sys.executable, "-c", OLD_INSTALL, agent, ",".join(BEFORE.get(agent, []))],
                   env=env, check=True, timeout=60)
    old = hook_file.read_bytes()
    assert b"-m rewindfs.hooks" in old   # the scenario: an install without the after events
    assert b"PostToolUse" not in old and b"AfterTool" not in old and \
        b"tool.execute.after" not in old and b"afterShellExecution" not in old

    row = _status(user, agent)
    assert row["installed"] and not row["active"]
    assert "older rewindfs" in row["problem"] and f"rewind hooks install {agent}" in \
        row["problem"], row
    assert "older rewindfs" in user("hooks", "status").stdout

    assert "installed in" in user("hooks", "install", agent).stdout
    assert "older rewindfs" not in (_status(user, agent)["problem"] or "")
    upgraded = hook_file.read_text()
    assert all(event in upgraded for event in AFTER.get(agent, ["tool.execute.after"]))
    user("hooks", "uninstall", agent)
    assert path.read_bytes() == before
    if hook_file != path:
        assert not hook_file.exists()


def _status(user, agent: str) -> dict:
    rows = json.loads(user("hooks", "status", "--json").stdout)["agents"]
    return next(r for r in rows if r["agent"] == agent)
