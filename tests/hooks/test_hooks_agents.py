"""The hooks with the real agent CLIs from npm, offline (tests/agentsim): a scripted session
runs a harmless command, writes two files and runs `rm important.txt`; the installed hook
checkpointed before the first write and before the rm (and not for `ls`), the checkpoints
name the agent and its turn, `rewind revert TURN` / `rewind redo` and an ordinary
`rewind restore` bring the file back, and `rewind hooks uninstall` leaves the agent's config
byte for byte as it was. Cursor's CLI cannot run offline from npm: tests/hooks/test_hooks_payloads
covers its documented payloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell, Write
from agentsim.clis import BINARIES, Agent, binary, missing

AGENTS = sorted(BINARIES)
pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]


def _config_files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*"))
            if p.is_file() and any(part in p.parts for part in
                                   (".claude", ".codex", ".gemini", "opencode", "kilo"))
            and p.suffix in (".json", ".toml", ".js")}


@pytest.mark.parametrize("agent", AGENTS)
def test_agent_session_checkpointed_by_hook_and_undone(agent: str, tmp_path: Path, home: Path,
                                                       run_rewind, monkeypatch) -> None:
    if binary(agent) is None:
        pytest.skip(missing(agent))
    # The hooks' helper serves this session as it would a user's (tests/hooks/conftest.py
    # stops it; a short idle time in case one starts after that).
    monkeypatch.setenv("REWIND_HOOK_HELPER_IDLE", "30")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "important.txt").write_text("keep me\n")
    (project / "package.json").write_text("{}\n")
    agent_home = tmp_path / "agent-home"
    moves = [Shell("ls -la"), Write("notes.txt", "one\n"), Write("more.txt", "two\n"),
             Shell("rm important.txt"), Say("All done.")]
    with ModelServer(moves, project=str(project)) as srv:
        session = Agent(agent, agent_home, project, srv)
        env = {k: v for k, v in session.env().items() if k in (
            "HOME", "XDG_CONFIG_HOME", "CODEX_HOME")}
        before = _config_files(agent_home)
        run_rewind("hooks", "install", agent, env=env, check=True)
        assert _config_files(agent_home) != before
        run = session.run("tidy up")
        log = (f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}\n"
               f"{srv.describe()}\n{(home / 'rewind-hooks' / 'hook.log').read_text()}")
    assert run.returncode == 0, log
    assert not (project / "important.txt").exists(), log

    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    reasons = [cp["reason"] for cp in listed]
    # Newest first: the files the rm left; the oldest, before the turn's first write. Each
    # call's before or after holds what changed since the one before (a call that found
    # nothing changed took none); the harmless `ls` took none at all.
    assert reasons[0] == "after: rm important.txt", (reasons, log)
    # "before: <the agent's write tool> notes.txt": the file, relative, never its contents.
    assert reasons[-1].startswith("before: ") and reasons[-1].split(" ", 2)[2] == \
        "notes.txt", (reasons, log)
    assert not any("ls" in r.split() for r in reasons), reasons
    trailers = listed[0]["trailers"]
    assert trailers["Rewind-Agent"] == agent and trailers["Rewind-Turn"], trailers
    turn = trailers["Rewind-Turn"]
    assert {cp["trailers"]["Rewind-Turn"] for cp in listed} == {turn}   # one prompt, one turn
    shown = run_rewind("list", cwd=project, check=True).stdout
    assert f"({agent}, turn {turn})" in shown, shown

    # The turn, as with the Python API: reverted (the rm undone, the writes gone), redone.
    run_rewind("revert", turn, cwd=project, check=True)
    assert (project / "important.txt").read_text() == "keep me\n"
    assert not (project / "notes.txt").exists() and not (project / "more.txt").exists()
    run_rewind("redo", cwd=project, check=True)
    assert not (project / "important.txt").exists()
    assert (project / "notes.txt").read_text() == "one\n"

    # An ordinary restore of the checkpoint the hook took before the rm (the one before its
    # after) brings the file back (the revert added checkpoints on top: find it by reason).
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    number = next(cp["number"] for cp in listed if cp["reason"] == "after: rm important.txt")
    run_rewind("restore", str(number + 1), "--yes", cwd=project, check=True)
    assert (project / "important.txt").read_text() == "keep me\n"

    # Uninstall puts the hook's file back as it was before install and touches nothing else
    # (the agent itself may have rewritten its own config meanwhile: OpenCode adds $schema).
    running = _config_files(agent_home)
    run_rewind("hooks", "uninstall", agent, env=env, check=True)
    after = _config_files(agent_home)
    changed = {k for k in set(running) | set(after) if running.get(k) != after.get(k)}
    assert changed and all(after.get(k) == before.get(k) for k in changed), (changed, log)


RM = [Shell("rm important.txt"), Say("All done.")]


def _project_to_rm_in(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "important.txt").write_text("keep me\n")
    (project / "package.json").write_text("{}\n")
    return project


def _only_the_rm_checkpointed(run, run_rewind, project: Path, agent: str) -> None:
    assert run.returncode == 0, run.stderr[-2000:]
    assert not (project / "important.txt").exists()
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    assert [cp["reason"] for cp in listed] == ["after: rm important.txt",
                                               "before: rm important.txt"]
    assert {cp["trailers"]["Rewind-Agent"] for cp in listed} == {agent}


@pytest.mark.parametrize("agent", ["claude-code", "codex", "kilo"])
def test_project_level_hooks_run(agent: str, tmp_path: Path, home: Path, run_rewind,
                                 monkeypatch) -> None:
    """`--project DIR` hooks (a settings file, Codex's with the project trusted, a plugin)."""
    if binary(agent) is None:
        pytest.skip(missing(agent))
    monkeypatch.setenv("REWIND_HOOK_HELPER", "0")
    project = _project_to_rm_in(tmp_path)
    with ModelServer(RM, project=str(project)) as srv:
        session = Agent(agent, tmp_path / "agent-home", project, srv)
        if agent == "codex":   # Codex loads a project's hooks only where it trusts it
            with open(tmp_path / "agent-home" / ".codex" / "config.toml", "a") as fh:
                fh.write(f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
        run_rewind("hooks", "install", agent, "--project", str(project),
                   env={"HOME": str(tmp_path / "agent-home")}, check=True)
        run = session.run("remove it")
    _only_the_rm_checkpointed(run, run_rewind, project, agent)


@pytest.mark.parametrize("agent,variable", [("claude-code", "CLAUDE_CONFIG_DIR"),
                                            ("gemini", "GEMINI_CLI_HOME")])
def test_config_dir_moved_by_the_agents_variable(agent: str, variable: str, tmp_path: Path,
                                                 home: Path, run_rewind, monkeypatch) -> None:
    """The agent's own variable for its config folder: install writes where the agent reads."""
    if binary(agent) is None:
        pytest.skip(missing(agent))
    monkeypatch.setenv("REWIND_HOOK_HELPER", "0")
    project = _project_to_rm_in(tmp_path)
    agent_home, elsewhere = tmp_path / "agent-home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Claude Code: its config folder itself; Gemini CLI: the home it keeps .gemini in (the
    # agent's setup wrote its settings there), with HOME elsewhere.
    moved = tmp_path / "claude-config" if agent == "claude-code" else agent_home
    extra = {variable: str(moved)} | ({} if agent == "claude-code" else {"HOME": str(elsewhere)})
    with ModelServer(RM, project=str(project)) as srv:
        session = Agent(agent, agent_home, project, srv, extra_env=extra)
        env = {"HOME": session.env()["HOME"], **extra}
        settings = moved / ("settings.json" if agent == "claude-code" else ".gemini/settings.json")
        before = settings.read_bytes() if settings.exists() else None
        out = run_rewind("hooks", "install", agent, env=env, check=True).stdout
        assert str(moved) in out, out
        run = session.run("remove it")
    _only_the_rm_checkpointed(run, run_rewind, project, agent)
    run_rewind("hooks", "uninstall", agent, env=env, check=True)
    assert (settings.read_bytes() if settings.exists() else None) == before
    assert not any(elsewhere.rglob("*.json")) and not any(elsewhere.rglob("*.js"))


WRITE_TOOL = {"claude-code": "Write", "gemini": "write_file", "opencode": "write",
              "kilo": "write"}


@pytest.mark.parametrize("agent,resume", [("claude-code", ("--continue",)),
                                          ("gemini", ("--resume", "latest")),
                                          ("opencode", ("--continue",)),
                                          ("kilo", ("--continue",))])
def test_each_turn_of_a_session_is_its_own(agent: str, resume: tuple[str, ...], tmp_path: Path,
                                           home: Path, run_rewind, monkeypatch) -> None:
    """Two prompts of one session (the second resumes it): each turn's first write has its
    checkpoint, and `rewind revert TURN` takes back that turn alone. Gemini CLI names no
    turn in its tool payloads (the hook's BeforeAgent does), nor do OpenCode's and Kilo's
    (the plugin's chat.message does). Codex's turn_id is Codex's own."""
    if binary(agent) is None:
        pytest.skip(missing(agent))
    monkeypatch.setenv("REWIND_HOOK_HELPER", "0")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    agent_home = tmp_path / "agent-home"
    # The model answers by how many tool results the conversation holds: the resumed
    # session's second prompt arrives with the first turn's one.
    turns = ([Write("a.txt", "one\n"), Say("First done.")],
             [Shell("true"), Write("b.txt", "two\n"), Say("Second done.")])
    for n, moves in enumerate(turns):
        with ModelServer(moves, project=str(project)) as srv:
            session = Agent(agent, agent_home, project, srv, extra_args=resume if n else ())
            if not n:
                env = {k: v for k, v in session.env().items()
                       if k in ("HOME", "XDG_CONFIG_HOME")}
                run_rewind("hooks", "install", agent, env=env, check=True)
            run = session.run("write a file")
        assert run.returncode == 0 and (project / ("b.txt" if n else "a.txt")).exists(), \
            (run.stderr[-2000:], srv.describe())
    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    # Before the first write (the second's found nothing changed since the first's after),
    # and after each.
    assert [cp["reason"] for cp in listed] == [
        f"after: {WRITE_TOOL[agent]} b.txt", f"after: {WRITE_TOOL[agent]} a.txt",
        f"before: {WRITE_TOOL[agent]} a.txt"], [cp["reason"] for cp in listed]
    second, first = listed[0], listed[-1]
    assert first["trailers"]["Rewind-Session"] == second["trailers"]["Rewind-Session"]
    turn1, turn2 = first["trailers"]["Rewind-Turn"], second["trailers"]["Rewind-Turn"]
    assert turn1 != turn2
    run_rewind("revert", turn2, cwd=project, check=True)
    assert not (project / "b.txt").exists() and (project / "a.txt").read_text() == "one\n"
    run_rewind("revert", turn1, cwd=project, check=True)
    assert not (project / "a.txt").exists()
