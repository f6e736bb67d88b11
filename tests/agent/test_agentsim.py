"""The offline agent harness: the scripted model server, and each real agent CLI from npm
running a scripted shell command through it (the ground the hook tests stand on)."""

from __future__ import annotations

import json
import socket
import sys
import urllib.request
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell, Write, codexapp
from agentsim.clis import BINARIES, Agent, binary, missing
from agentsim.codexapp import CodexApp
from agentsim.recorded import ON_WORKER
from agentsim.server import protocol_of

AGENTS = sorted(BINARIES)


def _post(url: str, body: dict) -> tuple[str, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def test_server_routes_each_protocol_and_answers_by_tool_results() -> None:
    assert protocol_of("/v1/messages?beta=true") == "anthropic"
    assert protocol_of("/v1/responses") == "responses"
    assert protocol_of("/v1beta/models/g:streamGenerateContent?alt=sse") == "gemini"
    assert protocol_of("/v1/chat/completions") == "chat"
    with ModelServer([Shell("rm a"), Say("bye")]) as srv:
        tools = [{"type": "function", "function": {"name": "bash"}}]
        kind, first = _post(f"{srv.url}/v1/chat/completions",
                            {"stream": True, "tools": tools, "messages": []})
        assert kind == "text/event-stream" and b'"name": "bash"' in first
        assert b'\\"command\\": \\"rm a\\"' in first
        # One tool result in the conversation: the script has moved on to the final text.
        _, second = _post(f"{srv.url}/v1/chat/completions",
                          {"stream": True, "tools": tools,
                           "messages": [{"role": "tool", "content": "ok"}]})
        assert b'"content": "bye"' in second and b"tool_calls" not in second
        # A side call without tools (title generation) gets text and never moves the script.
        _, title = _post(f"{srv.url}/v1/chat/completions", {"messages": []})
        assert b"tool_calls" not in title
        assert [r.protocol for r in srv.requests] == ["chat", "chat", "chat"]


def test_a_say_in_the_middle_ends_a_turn_of_one_session() -> None:
    """`Say` between moves: the next prompt of the session (`-c`) goes on after it."""
    with ModelServer([Shell("one"), Say("first turn done"), Shell("two"), Say("bye")]) as srv:
        tools = [{"type": "function", "function": {"name": "bash"}}]
        user, tool = {"role": "user", "content": "go"}, {"role": "tool", "content": "ok"}
        answers = [_post(f"{srv.url}/v1/chat/completions",
                         {"stream": True, "tools": tools, "messages": messages})[1]
                   for messages in ([user], [user, tool], [user, tool, user],
                                    [user, tool, user, tool])]
    assert b'\\"command\\": \\"one\\"' in answers[0]
    assert b'"content": "first turn done"' in answers[1]
    assert b'\\"command\\": \\"two\\"' in answers[2]
    assert b'"content": "bye"' in answers[3]


def test_server_listens_on_loopback_and_stops_by_itself() -> None:
    srv = ModelServer([Say()], deadline=0.2)
    with srv:
        assert srv._httpd.server_address[0] == "127.0.0.1"
        port = srv.port
        srv._timer.join(5)   # the deadline fired and stopped the server
        assert srv._httpd is None
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_server_refuses_other_hosts_as_a_proxy() -> None:
    with ModelServer([Say()]) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as conn:
            conn.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
            assert conn.recv(100).startswith(b"HTTP/1.1 403")
        assert srv.stray() == ["example.com:443"]


# Answers each request in one write, a notification first: the pipe then holds both lines
# at once, as it does for a late reader of the real app-server (CI under load).
APP_SERVER_STANDIN = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:
        note = {"method": "configWarning", "params": {}}
        answer = {"id": message["id"], "result": {"method": message["method"]}}
        sys.stdout.write(json.dumps(note) + "\\n" + json.dumps(answer) + "\\n")
        sys.stdout.flush()
"""


def test_codex_app_takes_an_answer_that_came_with_the_line_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = tmp_path / "app-server"
    server.write_text(f"#!{sys.executable}\n{APP_SERVER_STANDIN}")
    server.chmod(0o755)
    monkeypatch.setattr(codexapp, "binary", lambda name: server)
    with ModelServer([Say()]) as srv:
        agent = Agent("codex", tmp_path / "home", tmp_path, srv)
        with CodexApp(agent, timeout=30) as app:   # and its initialize, answered so too
            assert app.call("hooks/list", {}) == {"method": "hooks/list"}
    assert app.proc.returncode == 0   # it stopped at the end of its input, not by a kill


@pytest.mark.long
@pytest.mark.parametrize("agent", [pytest.param(a, marks=ON_WORKER[a]) if a in ON_WORKER else a
                                   for a in AGENTS])
def test_real_agent_runs_scripted_shell_command_and_write(agent: str, tmp_path: Path,
                                                          agent_session) -> None:
    if binary(agent) is None:
        pytest.skip(missing(agent))
    if agent in ON_WORKER:
        # Kilo and OpenCode: the session the suite records once (agentsim.recorded; a Kilo
        # run is ~10 s of CPU), which wrote a file, ran sed and rm, over two turns.
        recorded = agent_session(agent)
        facts, project = recorded.facts, recorded.project
        log = "\n".join([*(f"{r['stdout']}\n{r['stderr']}" for r in facts["runs"]), facts["log"]])
        assert [r["returncode"] for r in facts["runs"]] == [0, 0], log
        assert "first turn done" in facts["runs"][0]["stdout"], log
        assert "second turn done" in facts["runs"][1]["stdout"], log
        assert (project / "new.txt").read_text() == "created by the agent\n", log
        assert (project / "a.txt").read_text() == "hello edited\n", log
        assert not (project / "b.txt").exists(), log
        assert facts["requests"].count("chat") >= 5, log   # a request per move: 3 tools, 2 ends
        assert not facts["stray"], log   # nothing it tried to reach was off this machine
        return
    project = tmp_path / "proj"
    project.mkdir()
    (project / "important.txt").write_text("keep me\n")
    moves = [Shell("rm important.txt"), Write("notes.txt", "scripted\n"), Say("All done.")]
    with ModelServer(moves, project=str(project)) as srv:
        run = Agent(agent, tmp_path / "home", project, srv).run("remove important.txt")
        log = f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}\n{srv.describe()}"
        main = [r for r in srv.requests if r.protocol not in ("other", "stray")]
    assert run.returncode == 0, log
    # The agent asked the server, ran the scripted command, and sent its result back.
    assert "All done." in run.stdout, log
    assert not (project / "important.txt").exists(), log
    assert (project / "notes.txt").read_text() == "scripted\n", log
    assert len(main) >= 3, log
    assert not srv.stray(), log   # nothing it tried to reach was off this machine
