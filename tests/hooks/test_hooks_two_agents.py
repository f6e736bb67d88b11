"""Two sessions of a real agent CLI (offline, scripted models) working at the same time in
one directory, their writes and shell commands interleaved (issue 45). The model server
holds each session at every request until the test lets it go, so the calls land in the
order the test chooses while both processes run. Through the hooks `rewind hooks install`
wrote (before and after each call), `rewind revert` of one session's turn leaves every
byte the other wrote, keeps and names the file both changed, and `rewind undo` puts
back the state before the revert; `rewind list --session` and `rewind show` name the
session."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell, Write
from agentsim.clis import Agent, binary, missing

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]

STEP_SECONDS = 120.0   # for one tool call of a real agent to be done (a hung run's bound)

A_MOVES = [Write("a.txt", "a by A\n"), Write("a2.txt", "a2 by A\n"),
           Shell("sed -i 's/by A/by A, edited/' a.txt"),
           Shell("sed -i '$a A was here too' shared.txt"), Say("A done.")]
B_MOVES = [Write("b.txt", "b by B\n"), Write("shared.txt", "B wrote this\n"),
           Shell("rm base.txt"), Say("B done.")]
# (session, move): A writes a.txt; B writes b.txt and shared.txt; A writes a2.txt; B
# removes base.txt; A edits a.txt and then B's shared.txt.
ORDER = [("A", 0), ("B", 0), ("B", 1), ("A", 1), ("B", 2), ("A", 2), ("A", 3)]


class Held:
    """One session's model requests, each answered once the test allows it: `run(n)`
    lets the answer with tool call n go, then waits until the agent asks again with n + 1
    tool results (the call and its hooks are done)."""

    def __init__(self, name: str):
        self.name = name
        self.cond = threading.Condition()
        self.reached, self.allowed = -1, -1
        self.proc: subprocess.Popen | None = None

    def gate(self, n: int) -> None:
        with self.cond:
            self.reached = max(self.reached, n)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.allowed >= n, timeout=STEP_SECONDS * 4)

    def run(self, n: int, describe) -> None:
        end = time.monotonic() + STEP_SECONDS
        with self.cond:
            self.allowed = n
            self.cond.notify_all()
            while self.reached < n + 1:
                assert self.proc is None or self.proc.poll() is None, \
                    f"session {self.name} ended before its call {n} was done\n{describe()}"
                left = end - time.monotonic()
                assert left > 0, f"session {self.name}: call {n} not done\n{describe()}"
                self.cond.wait(min(left, 1.0))

    def finish(self) -> None:
        with self.cond:
            self.allowed = 10 ** 6
            self.cond.notify_all()


def files(project: Path) -> dict[str, str]:
    return {str(p.relative_to(project)): p.read_text() for p in sorted(project.rglob("*"))
            if p.is_file() and ".git" not in p.parts}


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_two_sessions_at_the_same_time_revert_one(agent: str, tmp_path: Path, home: Path,
                                                 run_rewind, monkeypatch) -> None:
    if binary(agent) is None:
        pytest.skip(missing(agent))
    monkeypatch.setenv("REWIND_HOOK_HELPER_IDLE", "30")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "base.txt").write_text("base\n")
    (project / "package.json").write_text("{}\n")
    held = {"A": Held("A"), "B": Held("B")}
    with ModelServer(A_MOVES, project=str(project), gate=held["A"].gate) as srv_a, \
            ModelServer(B_MOVES, project=str(project), gate=held["B"].gate) as srv_b:
        # A home each (Codex keeps its model provider's address in its home's config);
        # one rewindfs store, the test's.
        sessions = {"A": Agent(agent, tmp_path / "home-a", project, srv_a),
                    "B": Agent(agent, tmp_path / "home-b", project, srv_b)}
        for session in sessions.values():
            env = {k: v for k, v in session.env().items()
                   if k in ("HOME", "XDG_CONFIG_HOME", "CODEX_HOME")}
            run_rewind("hooks", "install", agent, env=env, check=True)
        outs = {name: tmp_path / f"{name}.out" for name in held}
        for name, session in sessions.items():
            exe, args = binary(agent), _args(session, f"session {name}: do your part")
            with open(outs[name], "w") as out:
                held[name].proc = subprocess.Popen(
                    [str(exe), *args], cwd=project, env=session.env(),
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)

        def describe() -> str:
            log = home / "rewind-hooks" / "hook.log"
            return "\n".join([*(f"--- {n}\n{o.read_text()[-2000:]}" for n, o in outs.items()),
                              f"--- A's model\n{srv_a.describe()}",
                              f"--- B's model\n{srv_b.describe()}",
                              log.read_text()[-4000:] if log.exists() else ""])

        try:
            for name, n in ORDER:
                held[name].run(n, describe)
        finally:
            for h in held.values():
                h.finish()
            for h in held.values():
                try:
                    h.proc.wait(timeout=STEP_SECONDS)
                except subprocess.TimeoutExpired:
                    h.proc.kill()
                    h.proc.wait()
        assert all(h.proc.returncode == 0 for h in held.values()), describe()
    before = files(project)
    assert before["a.txt"] == "a by A, edited\n" and before["shared.txt"] == \
        "B wrote this\nA was here too\n" and "base.txt" not in before, (before, describe())

    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    b_session = next(cp["trailers"]["Rewind-Session"] for cp in listed
                     if "b.txt" in cp["reason"])
    b_turn = next(cp["trailers"]["Rewind-Turn"] for cp in listed
                  if cp["trailers"].get("Rewind-Session") == b_session)
    a_session = next(cp["trailers"]["Rewind-Session"] for cp in listed
                     if "a2.txt" in cp["reason"])
    assert a_session != b_session

    # One session's checkpoints, and whose a checkpoint is.
    mine = json.loads(run_rewind("list", "--session", b_session, "--json", cwd=project,
                                 check=True).stdout)
    assert mine and {cp["trailers"]["Rewind-Session"] for cp in mine} == {b_session}
    shown = run_rewind("show", str(mine[0]["number"]), cwd=project, check=True).stdout
    assert f"session {b_session}" in shown, shown

    out = run_rewind("revert", b_turn, cwd=project, check=True).stdout
    assert f"of {agent} session {b_session}" in out.splitlines()[0], out
    assert "kept: shared.txt" in out and f"{agent} session {a_session} changed it" in out, out
    now = files(project)
    # Every byte A wrote stays; B's own work is taken back; the file both changed is kept.
    assert now["a.txt"] == "a by A, edited\n" and now["a2.txt"] == "a2 by A\n", now
    assert now["shared.txt"] == "B wrote this\nA was here too\n"
    assert now["base.txt"] == "base\n" and "b.txt" not in now, now
    assert {k: v for k, v in now.items() if k not in ("base.txt", "b.txt")} == \
        {k: v for k, v in before.items() if k not in ("base.txt", "b.txt")}

    run_rewind("undo", cwd=project, check=True)
    assert files(project) == before


def _args(session: Agent, prompt: str) -> list[str]:
    from agentsim.clis import ARGS

    return [*ARGS[session.name](session, prompt), *session.extra_args]
