"""Each agent's hook payload (as the real CLIs send it, and Cursor's as documented) through
the real hook entry in a subprocess: what it checkpoints, what it answers, what it ignores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewindfs.hooks import payloads


def hook(agent: str, payload: object, home: Path, raw: bytes | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    data = raw if raw is not None else json.dumps(payload).encode()
    return subprocess.run([sys.executable, "-m", "rewindfs.hooks", agent], input=data,
                          capture_output=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HERMES_HOME": str(home),
                               "HOME": str(home.parent), "REWIND_HOOK_HELPER": "0",
                               **(env or {})})


def claude(cwd: Path, tool: str, tool_input: dict, turn: str = "p1", call: str = "t1",
           event: str = "PreToolUse") -> dict:
    return {"session_id": "s1", "transcript_path": "/x.jsonl", "cwd": str(cwd),
            "prompt_id": turn, "permission_mode": "default", "hook_event_name": event,
            "tool_name": tool, "tool_input": tool_input, "tool_use_id": call}


def codex(cwd: Path, command: str, call: str = "c1") -> dict:
    return {"session_id": "s2", "turn_id": "turn-9", "transcript_path": "/x.jsonl",
            "cwd": str(cwd), "hook_event_name": "PreToolUse", "model": "gpt",
            "permission_mode": "bypassPermissions", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": call}


def gemini(cwd: Path, event: str, tool: str = "", tool_input: dict | None = None,
           stamp: str = "2026-01-01T00:00:00.000Z") -> dict:
    data = {"session_id": "g1", "transcript_path": "/x.jsonl", "cwd": str(cwd),
            "hook_event_name": event, "timestamp": stamp}
    if event in ("BeforeTool", "AfterTool"):
        data.update(tool_name=tool, tool_input=tool_input or {})
    else:
        data["prompt"] = "do it"
    return data


def cursor_shell(cwd: Path, command: str, generation: str = "gen-1") -> dict:
    # Cursor's documented beforeShellExecution payload.
    return {"conversation_id": "conv-1", "generation_id": generation, "model": "m",
            "hook_event_name": "beforeShellExecution", "command": command, "cwd": str(cwd),
            "workspace_roots": [str(cwd)], "cursor_version": "2.0"}


def plugin(cwd: Path, tool: str, args: dict, turn: str = "msg_1", call: str = "call_1") -> dict:
    # What our OpenCode/Kilo plugin sends from tool.execute.before.
    return {"tool": tool, "sessionID": "ses_1", "callID": call, "args": args,
            "directory": str(cwd), "turn": turn}


def checkpoints(run_rewind, project: Path) -> list[dict]:
    proc = run_rewind("list", "--json", cwd=project)
    return json.loads(proc.stdout) if proc.returncode == 0 else []


@pytest.fixture
def proj(project: Path) -> Path:
    (project / "package.json").write_text("{}\n")
    return project


def test_harmless_command_takes_no_checkpoint(proj: Path, home: Path, run_rewind) -> None:
    for agent, payload in (("claude-code", claude(proj, "Bash", {"command": "ls -la"})),
                           ("codex", codex(proj, "git status")),
                           ("gemini", gemini(proj, "BeforeTool", "run_shell_command",
                                             {"command": "cat README.md"})),
                           ("opencode", plugin(proj, "bash", {"command": "grep -r x ."})),
                           ("kilo", plugin(proj, "read", {"filePath": str(proj / "a")}))):
        done = hook(agent, payload, home)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), agent
    assert checkpoints(run_rewind, proj) == []


@pytest.mark.parametrize("agent,payload", [
    ("claude-code", lambda p: claude(p, "Bash", {"command": "rm -rf src"})),
    ("codex", lambda p: codex(p, "rm -rf src")),
    ("gemini", lambda p: gemini(p, "BeforeTool", "run_shell_command", {"command": "rm -rf src"})),
    ("opencode", lambda p: plugin(p, "bash", {"command": "rm -rf src"})),
    ("kilo", lambda p: plugin(p, "bash", {"command": "rm -rf src"})),
])
def test_destructive_command_checkpoints_first(agent, payload, proj: Path, home: Path,
                                               run_rewind) -> None:
    done = hook(agent, payload(proj), home)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    [cp] = checkpoints(run_rewind, proj)
    assert cp["reason"] == "before: rm -rf src"
    assert cp["trailers"]["Rewind-Agent"] == agent and cp["trailers"]["Rewind-Turn"]
    # Nothing changed since: the same command again writes no new checkpoint.
    hook(agent, payload(proj), home)
    assert len(checkpoints(run_rewind, proj)) == 1


def test_cursor_answers_allow_and_checkpoints(proj: Path, home: Path, run_rewind) -> None:
    done = hook("cursor", cursor_shell(proj, "echo hi"), home)
    assert json.loads(done.stdout) == {"permission": "allow"} and done.stderr == b""
    assert checkpoints(run_rewind, proj) == []
    done = hook("cursor", cursor_shell(proj, "git reset --hard"), home)
    assert json.loads(done.stdout) == {"permission": "allow"}
    [cp] = checkpoints(run_rewind, proj)
    assert cp["trailers"]["Rewind-Turn"] == "gen-1"
    assert cp["trailers"]["Rewind-Session"] == "conv-1"
    # Even a payload it cannot read is allowed (never block the agent).
    assert json.loads(hook("cursor", None, home, raw=b"{oops").stdout) == {"permission": "allow"}


def test_cursor_pre_tool_use_write(proj: Path, home: Path, run_rewind) -> None:
    payload = {"conversation_id": "conv-1", "generation_id": "gen-2",
               "hook_event_name": "preToolUse", "tool_name": "Write",
               "tool_input": {"file_path": str(proj / "README.md"), "contents": "x"},
               "workspace_roots": [str(proj)]}
    assert json.loads(hook("cursor", payload, home).stdout) == {"permission": "allow"}
    [cp] = checkpoints(run_rewind, proj)
    assert cp["reason"] == "before: Write README.md"


def test_each_write_is_its_own_step(proj: Path, home: Path, run_rewind) -> None:
    """Every write has its before (nothing changed since the previous call's after: no
    checkpoint) and its after, which holds what the write changed."""
    for n in range(3):   # one turn, three edits
        hook("claude-code", claude(proj, "Edit", {"file_path": str(proj / "README.md")},
                                   call=f"e{n}"), home)
        (proj / "README.md").write_text(f"edit {n}\n")
        hook("claude-code", claude(proj, "Edit", {"file_path": str(proj / "README.md")},
                                   call=f"e{n}", event="PostToolUse"), home)
    listed = checkpoints(run_rewind, proj)
    assert [cp["reason"] for cp in listed] == ["after: Edit README.md"] * 3 + \
        ["before: Edit README.md"]
    assert [cp["trailers"]["Rewind-Phase"] for cp in listed] == ["after"] * 3 + ["before"]
    assert [cp["trailers"]["Rewind-Step"] for cp in listed] == \
        ["claude-code:e2", "claude-code:e1", "claude-code:e0", "claude-code:e0"]


AFTER_PAYLOADS = {
    "claude-code": lambda p, cmd: claude(p, "Bash", {"command": cmd}, event="PostToolUse"),
    "codex": lambda p, cmd: {**codex(p, cmd), "hook_event_name": "PostToolUse",
                             "tool_response": "ok"},
    "gemini": lambda p, cmd: gemini(p, "AfterTool", "run_shell_command", {"command": cmd}),
    "cursor": lambda p, cmd: {**cursor_shell(p, cmd), "hook_event_name": "afterShellExecution",
                              "output": "", "duration": 5},
    "opencode": lambda p, cmd: {**plugin(p, "bash", {"command": cmd}), "phase": "after"},
}
BEFORE_PAYLOADS = {
    "claude-code": lambda p, cmd: claude(p, "Bash", {"command": cmd}),
    "codex": lambda p, cmd: codex(p, cmd),
    "gemini": lambda p, cmd: gemini(p, "BeforeTool", "run_shell_command", {"command": cmd}),
    "cursor": lambda p, cmd: cursor_shell(p, cmd),
    "opencode": lambda p, cmd: plugin(p, "bash", {"command": cmd}),
}


@pytest.mark.parametrize("agent", sorted(AFTER_PAYLOADS))
def test_after_event_records_what_the_call_left(agent: str, proj: Path, home: Path,
                                                 run_rewind) -> None:
    """Each agent's after event ends the call's step with the files it left; a harmless
    command's after records nothing, as its before did not."""
    before, after = BEFORE_PAYLOADS[agent], AFTER_PAYLOADS[agent]
    for payload in (before(proj, "ls"), after(proj, "ls")):
        assert hook(agent, payload, home).stderr == b""
    assert checkpoints(run_rewind, proj) == []
    hook(agent, before(proj, "rm README.md"), home)
    (proj / "README.md").unlink()
    done = hook(agent, after(proj, "rm README.md"), home)
    assert done.returncode == 0 and done.stderr == b""
    newest, first = checkpoints(run_rewind, proj)
    assert (first["reason"], newest["reason"]) == ("before: rm README.md", "after: rm README.md")
    assert newest["trailers"]["Rewind-Phase"] == "after"
    assert newest["trailers"]["Rewind-Agent"] == agent
    steps = home / "checkpoints" / "store" / "steps"
    [log] = steps.iterdir()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events] == ["begin", "after"]
    assert events[0]["call"] == events[1]["call"] and events[0]["session"] == \
        events[1]["session"], events   # the after names the call its before began


def test_calls_without_an_id_pair_by_what_they_run(proj: Path, home: Path) -> None:
    """Gemini CLI and Cursor's shell events give no call id: the before and the after of
    one call share a key made of the tool and the command (the step id stays unique)."""
    a = payloads.parse("gemini", gemini(proj, "BeforeTool", "run_shell_command",
                                        {"command": "make"}))
    b = payloads.parse("gemini", gemini(proj, "AfterTool", "run_shell_command",
                                        {"command": "make"}))
    again = payloads.parse("gemini", gemini(proj, "BeforeTool", "run_shell_command",
                                            {"command": "make"}))
    other = payloads.parse("gemini", gemini(proj, "AfterTool", "run_shell_command",
                                            {"command": "make clean"}))
    assert (a.phase, b.phase) == ("before", "after") and a.key == b.key == again.key
    assert a.call != again.call and other.key != a.key
    c = payloads.parse("claude-code", claude(proj, "Write", {"file_path": "/p/a"},
                                             event="PostToolUseFailure"))
    assert (c.phase, c.key, c.call) == ("after", "t1", "t1")


def test_codex_apply_patch_through_shell_is_a_write(proj: Path, home: Path,
                                                   run_rewind) -> None:
    patch = ("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+secret\n"
             f"*** Update File: {proj / 'README.md'}\n*** Move to: docs/R.md\n@@\n-x\n+y\n"
             "*** End Patch\nEOF\n")
    hook("codex", codex(proj, patch), home)
    hook("codex", codex(proj, patch, call="c2"), home)
    [cp] = checkpoints(run_rewind, proj)
    # The reason names the files, not the patch (whose text holds the new contents).
    assert cp["reason"] == "before: apply_patch a.txt, README.md, docs/R.md"
    assert cp["trailers"]["Rewind-Turn"] == "turn-9"


def test_codex_apply_patch_tool_names_its_files(proj: Path, home: Path, run_rewind) -> None:
    payload = {**codex(proj, ""), "tool_name": "apply_patch",
               "tool_input": {"input": "*** Begin Patch\n*** Delete File: docs/guide.txt\n"
                                       "*** End Patch\n"}}
    hook("codex", payload, home)
    [cp] = checkpoints(run_rewind, proj)
    assert cp["reason"] == "before: apply_patch docs/guide.txt"


def test_gemini_turn_comes_from_before_agent(proj: Path, home: Path, run_rewind) -> None:
    stamp = "2026-02-03T04:05:06.000Z"
    assert hook("gemini", gemini(proj, "BeforeAgent", stamp=stamp), home).stdout == b""
    hook("gemini", gemini(proj, "BeforeTool", "write_file",
                          {"file_path": str(proj / "x.txt"), "content": "x"}), home)
    [cp] = checkpoints(run_rewind, proj)
    assert cp["trailers"]["Rewind-Turn"] == stamp
    assert cp["reason"] == "before: write_file x.txt"


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'{"tool_name": "Bash"}',
                                 b'{"hook_event_name": "Stop", "cwd": "/"}', b"\xff\xfe"])
def test_malformed_payloads_are_logged_and_ignored(raw: bytes, proj: Path, home: Path,
                                                   run_rewind) -> None:
    done = hook("claude-code", None, home, raw=raw)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert checkpoints(run_rewind, proj) == []
    log = (home / "rewind-hooks" / "hook.log").read_text()
    assert " claude-code skipped ignored: " in log


def test_unknown_agent_and_failed_checkpoint_never_fail_the_agent(tmp_path: Path,
                                                                  home: Path) -> None:
    done = hook("vim", {"cwd": "/"}, home)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    # A destructive command in a directory that is not a project (the home dir): logged,
    # and said to the agent's user (issue 43).
    done = hook("claude-code", claude(home.parent, "Bash", {"command": "rm -rf x"}), home)
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout)["systemMessage"].startswith("rewind: not protected: ")
    log = (home / "rewind-hooks" / "hook.log").read_text().splitlines()
    assert "unknown agent 'vim'" in log[0] and " claude-code error " in log[-1], log


def test_checkpoint_past_the_deadline_is_skipped_and_logged(proj: Path, home: Path,
                                                           run_rewind) -> None:
    # A deadline nothing can meet (it covers the whole hook: reading the payload,
    # classifying, the checkpoint): the hook gives up, logs what it was doing as skipped
    # and exits 0. Once it knows the call, it tells the agent's user the command ran
    # unprotected (issue 43).
    done = hook("claude-code", claude(proj, "Bash", {"command": "rm -rf src"}), home,
                env={"REWIND_HOOK_TIMEOUT": "0.001"})
    assert (done.returncode, done.stderr) == (0, b"")
    log = (home / "rewind-hooks" / "hook.log").read_text()
    assert "did not finish within 0.001s: skipped" in log
    if "reading the payload did not finish" in log:
        assert done.stdout == b""
    else:
        message = json.loads(done.stdout)["systemMessage"]
        assert message.startswith("rewind: not protected: ") and "within 0.001s" in message
    assert checkpoints(run_rewind, proj) == []


def test_parse_rejects_what_the_agent_never_sends() -> None:
    with pytest.raises(payloads.Unknown):
        payloads.parse("claude-code", {"hook_event_name": "PreToolUse", "tool_name": "Bash"})
    with pytest.raises(payloads.Unknown):
        payloads.parse("cursor", {"hook_event_name": "afterFileEdit", "cwd": "/"})
    call = payloads.parse("opencode", plugin(Path("/p"), "edit", {"filePath": "/p/a"}))
    assert (call.kind, call.command, call.turn, call.call) == ("write", "a", "msg_1", "call_1")
