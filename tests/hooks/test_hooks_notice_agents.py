"""What a hook leaves unprotected reaches the user through the real agents (offline,
tests/agentsim), in each one's own output: a session in a folder that is in no project
(issue 43: refused, not checkpointed whole) shows the hook's "rewind: not protected"
line where that agent shows a hook's message to its user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import BINARIES, Agent, binary, missing

# Headless, Claude Code and Codex print only the model's answer; their event streams carry
# what their interactive UIs show the user, a hook's message among it.
EVENTS = {"claude-code": ("--output-format", "stream-json", "--verbose"),
          "codex": ("--json",)}

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]


@pytest.mark.parametrize("agent", sorted(BINARIES))
def test_the_user_sees_what_is_not_protected(agent: str, tmp_path: Path, home: Path,
                                             run_rewind, monkeypatch) -> None:
    if binary(agent) is None:
        pytest.skip(missing(agent))
    monkeypatch.setenv("REWIND_HOOK_HELPER", "0")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "notes.txt").write_text("mine\n")
    with ModelServer([Shell("rm notes.txt"), Say("All done.")], project=str(scratch)) as srv:
        session = Agent(agent, tmp_path / "agent-home", scratch, srv,
                        extra_args=EVENTS.get(agent, ()))
        env = {k: v for k, v in session.env().items()
               if k in ("HOME", "XDG_CONFIG_HOME", "CODEX_HOME")}
        run_rewind("hooks", "install", agent, env=env, check=True)
        run = session.run("remove my notes")
        log = (home / "rewind-hooks" / "hook.log").read_text()
    assert run.returncode == 0, (run.stderr[-3000:], srv.describe())
    assert not (scratch / "notes.txt").exists()   # the command ran ...
    assert "not protected" in log                 # ... unprotected (the scenario)
    told_model = json.dumps([r.body for r in srv.requests])
    # The user sees it: in the agent's output (Claude Code: its event stream, what its UI
    # shows; `codex exec` prints no hook message, its TUI does) ...
    shown = run.stdout + run.stderr
    if agent != "codex":
        assert "rewind: not protected: " in shown and "in no project" in shown, \
            (shown[-3000:], log)
    # ... and the model reads it, so the agent's own answer can say it (Gemini CLI hands
    # its hooks' messages to the user only).
    if agent != "gemini":
        assert "rewind: not protected: " in told_model, (told_model[-3000:], log)
