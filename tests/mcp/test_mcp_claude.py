"""The real Claude Code, offline against the scripted model (tests/agentsim), with the hook
and the MCP server installed as a user would (`rewind hooks install claude-code`, then
`... --mcp --allow-restore`): the model deletes a file with Bash, calls
mcp__rewind__list_checkpoints and mcp__rewind__restore; the file is back, the
pre-rollback snapshot exists, and `rewind undo` takes the restore back. The model's
requests prove Claude Code offered the server's tools and passed their answers back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell, Tool
from agentsim.clis import Agent, binary, missing

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]

LIST, RESTORE = "mcp__rewind__list_checkpoints", "mcp__rewind__restore"


def tool_results(srv: ModelServer) -> dict[str, str]:
    """Each tool call's id -> the text Claude Code sent back for it (from the last request,
    which carries the whole conversation)."""
    last = [r for r in srv.of("anthropic") if isinstance(r.body, dict) and r.body.get("tools")]
    out = {}
    for message in last[-1].body["messages"]:
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                out[block["tool_use_id"]] = content if isinstance(content, str) else "\n".join(
                    c.get("text", "") for c in content or [] if isinstance(c, dict))
    return out


def tool_calls(srv: ModelServer) -> list[tuple[str, str, dict]]:
    """(id, name, input) of every tool call the conversation holds, in order."""
    last = [r for r in srv.of("anthropic") if isinstance(r.body, dict) and r.body.get("tools")]
    return [(b["id"], b["name"], b["input"]) for m in last[-1].body["messages"]
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]


def test_claude_code_takes_back_its_own_rm_through_mcp(tmp_path: Path, home: Path, run_rewind,
                                                      monkeypatch) -> None:
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    monkeypatch.setenv("REWIND_HOOK_HELPER", "0")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "important.txt").write_text("keep me\n")
    (project / "package.json").write_text("{}\n")
    moves = [Shell("rm important.txt"),
             Tool(LIST, {}),
             Tool(RESTORE, {"ref": "2", "paths": ["important.txt"]}),
             Say("I deleted important.txt by mistake; it is back.")]
    with ModelServer(moves, project=str(project)) as srv:
        session = Agent("claude-code", tmp_path / "agent-home", project, srv,
                        extra_args=("--allowedTools", f"{LIST},{RESTORE}"))
        env = {"HOME": session.env()["HOME"]}
        run_rewind("hooks", "install", "claude-code", env=env, check=True)
        run_rewind("hooks", "install", "claude-code", "--mcp", "--allow-restore", env=env,
                   check=True)
        run = session.run("clean up the project")
        log = f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}\n" \
              f"{srv.describe()}"
        assert not srv.stray(), srv.stray()
        asked = [r for r in srv.of("anthropic") if isinstance(r.body, dict)
                 and r.body.get("tools")]
        offered = json.dumps(asked[-1].body)
        calls, results = tool_calls(srv), tool_results(srv)
    assert run.returncode == 0, log
    # Offered (Claude Code 2.1 defers MCP tools: it names them in the conversation once the
    # server is connected, and fetches their schemas on demand).
    assert all(name in offered for name in (LIST, RESTORE, "mcp__rewind__undo")), log
    assert [name for _, name, _ in calls] == ["Bash", LIST, RESTORE], (calls, log)
    listing, restored = results[calls[1][0]], results[calls[2][0]]
    # The rm's after is 1, its before 2 (the hook runs before and after each call).
    assert "2." in listing and "before: rm important.txt" in listing, (listing, log)
    assert "Restored" in restored and "Pre-rollback snapshot" in restored, (restored, log)

    # The file is back, and the restore saved what it found first.
    assert (project / "important.txt").read_text() == "keep me\n"
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    [taken] = [cp for cp in listed if cp["reason"] == "before: rm important.txt"]
    assert taken["number"] == 2 and taken["trailers"]["Rewind-Agent"] == "claude-code"
    # The state the restore overwrote was checkpointed already (the rm's after): it is the
    # restore's pre-rollback snapshot, no new one taken.
    [pre] = [cp for cp in listed if f"snapshot {cp['hash'][:8]}" in restored]
    assert pre["reason"] == "after: rm important.txt", (listed, restored)
    # `rewind undo` takes the agent's restore back.
    run_rewind("undo", cwd=project, check=True)
    assert not (project / "important.txt").exists()
    print(f"\nClaude Code called: {[(name, args) for _, name, args in calls]}\n"
          f"list_checkpoints answered:\n{listing}\nrestore answered:\n{restored}\n"
          f"`rewind list` after:\n"
          + run_rewind("list", cwd=project, check=True).stdout)
