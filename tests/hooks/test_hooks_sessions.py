"""Two Claude Code sessions in one directory through the installed hook (issue 45): each
tool call's PreToolUse and PostToolUse payloads as the agent sends them, to the command
`rewind hooks install` writes, the sessions' calls interleaved. `rewind revert TURN` takes
back that session's turns alone; a file both changed keeps its bytes and is named; calls
of two sessions running at the same time own what changed meanwhile together."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hookproc import hook_env, run_hook

pytestmark = pytest.mark.usefixtures("no_helper_left")


class Session:
    """One Claude Code session's tool calls, each bracketed by its hooks."""

    def __init__(self, name: str, project: Path, home: Path):
        self.name, self.project, self.home = name, project, home
        self.calls = 0

    def payload(self, turn: str, call: str, event: str, tool: str, tool_input: dict) -> bytes:
        return json.dumps({
            "session_id": self.name, "transcript_path": "/dev/null", "cwd": str(self.project),
            "permission_mode": "default", "hook_event_name": event, "prompt_id": turn,
            "tool_name": tool, "tool_input": tool_input, "tool_use_id": call}).encode()

    def hook(self, turn: str, call: str, event: str, tool: str, tool_input: dict) -> None:
        run_hook("claude-code", self.payload(turn, call, event, tool, tool_input),
                 self.project, hook_env(self.home))

    def before(self, turn: str, tool: str, **tool_input: str) -> str:
        self.calls += 1
        call = f"toolu_{self.name}{self.calls}"
        self.hook(turn, call, "PreToolUse", tool, tool_input)
        return call

    def after(self, turn: str, call: str, tool: str, **tool_input: str) -> None:
        self.hook(turn, call, "PostToolUse", tool, tool_input)

    def write(self, turn: str, rel: str, text: str) -> None:
        path = str(self.project / rel)
        call = self.before(turn, "Write", file_path=path, content=text)
        (self.project / rel).write_text(text)
        self.after(turn, call, "Write", file_path=path, content=text)

    def shell(self, turn: str, command: str) -> None:
        call = self.before(turn, "Bash", command=command)
        subprocess.run(command, shell=True, cwd=self.project, check=True)
        self.after(turn, call, "Bash", command=command)


@pytest.fixture
def sessions(project: Path, home: Path) -> tuple[Session, Session]:
    (project / "package.json").write_text("{}\n")
    return Session("A", project, home), Session("B", project, home)


def files(project: Path) -> dict[str, str]:
    return {str(p.relative_to(project)): p.read_text() for p in sorted(project.rglob("*"))
            if p.is_file()}


def test_the_issue_s_two_sessions(sessions, project: Path, run_rewind) -> None:
    a, b = sessions
    (project / "base.txt").write_text("base\n")
    (project / "a.txt").write_text("a\n")
    a.write("a1", "a.txt", "a by A\n")
    b.write("b1", "b.txt", "b by B\n")
    a.write("a2", "a2.txt", "a2 by A\n")
    b.shell("b2", "rm base.txt")
    a.shell("a3", "sed -i s/by/edited.by/ a.txt")
    before = files(project)

    out = run_rewind("revert", "b1", cwd=project, check=True).stdout
    assert out.splitlines()[0] == "reverted turn(s) b1, b2 of claude-code session B", out
    assert "  restored: base.txt" in out and "  deleted: b.txt" in out
    assert "a.txt" not in out and "a2.txt" not in out and "kept" not in out, out
    now = files(project)
    assert now["base.txt"] == "base\n" and "b.txt" not in now
    # Every byte A wrote stays.
    assert {k: v for k, v in now.items() if k != "base.txt"} == \
        {k: v for k, v in before.items() if k != "b.txt"}

    run_rewind("undo", cwd=project, check=True)
    assert files(project) == before


def test_a_file_both_sessions_changed_is_kept_and_named(sessions, project: Path,
                                                        run_rewind) -> None:
    a, b = sessions
    b.write("b1", "shared.txt", "B wrote this\n")
    b.write("b1", "b-only.txt", "B\n")
    a.shell("a1", "sed -i '$a A added this' shared.txt")
    before = files(project)
    proc = run_rewind("revert", "b1", "--json", cwd=project, check=True)
    result = json.loads(proc.stdout)
    assert result["session"] == "B" and result["agent"] == "claude-code"
    assert result["kept"] == [{"path": "shared.txt", "when": "later",
                               "sessions": [{"agent": "claude-code", "session": "A"}]}]
    assert result["deleted_files"] == ["b-only.txt"]
    assert files(project)["shared.txt"] == "B wrote this\nA added this\n"
    run_rewind("redo", cwd=project, check=True)
    assert files(project) == before
    out = run_rewind("revert", "b1", cwd=project, check=True).stdout
    assert ("  kept: shared.txt (claude-code session A changed it after this session did: "
            "its bytes stay)") in out, out


def test_calls_running_at_the_same_time_own_their_changes_together(
        sessions, project: Path, run_rewind) -> None:
    a, b = sessions
    ca = a.before("a1", "Bash", command="rm -rf build")
    cb = b.before("b1", "Bash", command="cp -r out dist")
    (project / "built.txt").write_text("who made me?\n")   # during both calls
    a.after("a1", ca, "Bash", command="rm -rf build")
    (project / "installed.txt").write_text("B's alone\n")   # A's call is over
    b.after("b1", cb, "Bash", command="cp -r out dist")
    result = json.loads(run_rewind("revert", "b1", "--json", cwd=project, check=True).stdout)
    assert [(k["path"], k["when"]) for k in result["kept"]] == [("built.txt", "same time")]
    assert result["deleted_files"] == ["installed.txt"]
    assert (project / "built.txt").exists() and not (project / "installed.txt").exists()


def test_a_change_no_call_recorded_is_kept_while_another_session_works(
        sessions, project: Path, run_rewind) -> None:
    """An append no call recorded (a person's, or a program's the hooks never see): whose
    it is cannot be told while another session works here, so a revert keeps it."""
    a, b = sessions
    b.write("b1", "log.txt", "B's first line\n")
    with open(project / "log.txt", "a") as fh:   # outside every call
        fh.write("an unrecorded append\n")
    a.write("a1", "a.txt", "A goes on\n")
    result = json.loads(run_rewind("revert", "b1", "--json", cwd=project, check=True).stdout)
    assert [(k["path"], k["when"], k["sessions"]) for k in result["kept"]] == \
        [("log.txt", "unrecorded", [{"agent": "claude-code", "session": "A"}])]
    assert (project / "log.txt").read_text() == "B's first line\nan unrecorded append\n"


def test_one_session_alone_reverts_as_before(sessions, project: Path, run_rewind) -> None:
    a, _ = sessions
    original = files(project)
    a.write("t1", "one.txt", "1\n")
    a.shell("t1", "rm README.md")
    after_t1 = files(project)
    a.write("t2", "two.txt", "2\n")
    (project / "two.txt").write_text("2, and a person's edit\n")   # outside any call
    out = run_rewind("revert", "t2", cwd=project, check=True).stdout
    assert out.splitlines()[0] == "reverted turn(s) t2 of claude-code session A"
    assert files(project) == after_t1
    run_rewind("revert", "t1", cwd=project, check=True)
    assert files(project) == original


def test_sessions_are_visible_and_a_shared_turn_name_needs_one(sessions, project: Path,
                                                               run_rewind) -> None:
    """`rewind list --session ID` lists one session's checkpoints (numbered as in the
    whole list), `rewind show` names a checkpoint's session, and a turn name both sessions
    use is refused in one line until `--session` says which."""
    a, b = sessions
    a.write("same-turn", "a.txt", "A\n")
    b.write("same-turn", "b.txt", "B\n")
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    mine = json.loads(run_rewind("list", "--session", "B", "--json", cwd=project,
                                 check=True).stdout)
    assert mine and all(cp["trailers"]["Rewind-Session"] == "B" for cp in mine)
    assert [cp["number"] for cp in mine] == [cp["number"] for cp in listed
                                              if cp["trailers"].get("Rewind-Session") == "B"]
    shown = run_rewind("show", str(mine[0]["number"]), cwd=project, check=True).stdout
    assert "agent:    claude-code, session B" in shown, shown
    proc = run_rewind("revert", "same-turn", cwd=project)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "2 sessions" in proc.stderr and "--session" in proc.stderr
    assert (project / "a.txt").exists() and (project / "b.txt").exists()
    out = run_rewind("revert", "same-turn", "--session", "B", cwd=project, check=True).stdout
    assert out.startswith("reverted turn(s) same-turn of claude-code session B"), out
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
    proc = run_rewind("list", "--session", "", cwd=project)
    assert proc.returncode != 0 and "--session needs" in proc.stderr
