"""Codex runs a hook only once the user trusted it in `/hooks`: `rewind hooks install codex`
says so and `rewind hooks status` reports Codex's verdict (trusted, untrusted, modified,
disabled), the same one the real Codex gives through its app-server; a session without
`--dangerously-bypass-hook-trust` is protected exactly when the status says active."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing
from agentsim.codexapp import CodexApp

pytestmark = pytest.mark.usefixtures("no_helper_left")


def _row(run_rewind, env: dict[str, str], *project: str) -> dict:
    out = run_rewind("hooks", "status", "--json", *project, env=env, check=True).stdout
    return next(r for r in json.loads(out)["agents"] if r["agent"] == "codex")


def _ours(app: CodexApp) -> dict[str, dict]:
    """Our hooks as Codex loads them, by event: the one before each call and the one
    after it."""
    found = {}
    for h in app.hooks():
        if "-m rewindfs.hooks codex" in h["command"]:
            event = "pre" if ":pre_tool_use:" in h["key"] else "post"
            assert event not in found and "_tool_use:" in h["key"], h
            found[event] = h
    assert set(found) == {"pre", "post"}, found
    return found


def _statuses(app: CodexApp) -> set[str]:
    return {h["trustStatus"] for h in _ours(app).values()}


def test_codex_trust_as_codex_sees_it(tmp_path: Path, home: Path, run_rewind,
                                      monkeypatch) -> None:
    if binary("codex") is None:
        pytest.skip(missing("codex"))
    monkeypatch.setenv("REWIND_HOOK_HELPER", "0")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "important.txt").write_text("keep me\n")
    (project / "package.json").write_text("{}\n")
    with ModelServer([Shell("rm important.txt"), Say("All done.")], project=str(project)) as srv:
        codex = Agent("codex", tmp_path / "agent-home", project, srv, bypass_hook_trust=False)
        env = {k: v for k, v in codex.env().items() if k in ("HOME", "CODEX_HOME")}
        out = run_rewind("hooks", "install", "codex", env=env, check=True).stdout
        assert "not trusted yet" in out and "/hooks" in out, out

        # Untrusted: Codex says so too, and a session runs the rm without the hook.
        with CodexApp(codex) as app:
            hooks = _ours(app)
        # Gone at the end of its input (the Node wrapper exits after the native server):
        # no server of this test shares the Codex home with the next one.
        assert app.proc.returncode == 0
        assert {h["trustStatus"] for h in hooks.values()} == {"untrusted"}, hooks
        row = _row(run_rewind, env)
        assert row["installed"] and not row["active"] and row["codex_trust"] == "untrusted"
        assert "/hooks" in row["problem"]
        assert "codex        installed, untrusted" in run_rewind(
            "hooks", "status", env=env, check=True).stdout
        run = codex.run("remove it")
        assert run.returncode == 0 and not (project / "important.txt").exists(), run.stderr
        assert json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout) == []

        # Trusted as Codex's /hooks does it: the status agrees, and the next session's rm
        # has its checkpoint.
        (project / "important.txt").write_text("keep me\n")
        with CodexApp(codex) as app:
            app.trust(hooks["pre"])   # one of the two: not enough
            assert _statuses(app) == {"trusted", "untrusted"}
        assert _row(run_rewind, env)["codex_trust"] == "untrusted"
        with CodexApp(codex) as app:
            app.trust(hooks["post"])
            assert _statuses(app) == {"trusted"}
        row = _row(run_rewind, env)
        assert row["active"] and row["codex_trust"] == "trusted" and not row["problem"], row
        assert "Codex already trusts" in run_rewind("hooks", "install", "codex", env=env,
                                                    check=True).stdout
        run = codex.run("remove it")
        assert run.returncode == 0 and not (project / "important.txt").exists(), run.stderr
        after, cp = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
        assert (cp["reason"], after["reason"]) == ("before: rm important.txt",
                                                   "after: rm important.txt")
        assert cp["trailers"]["Rewind-Agent"] == "codex"
        run_rewind("restore", str(cp["number"]), "--yes", cwd=project, check=True)
        assert (project / "important.txt").read_text() == "keep me\n"

        # A changed hook (here its timeout) must be trusted again: both say "modified".
        hooks_json = Path(env["CODEX_HOME"]) / "hooks.json"
        data = json.loads(hooks_json.read_text())
        data["hooks"]["PreToolUse"][-1]["hooks"][0]["timeout"] = 61
        hooks_json.write_text(json.dumps(data, indent=2) + "\n")
        with CodexApp(codex) as app:
            assert _ours(app)["pre"]["trustStatus"] == "modified"
        row = _row(run_rewind, env)
        assert not row["active"] and row["codex_trust"] == "modified", row

        # Turned off in /hooks.
        config = Path(env["CODEX_HOME"]) / "config.toml"
        with CodexApp(codex) as app:
            app.trust(_ours(app)["pre"])
            app.call("config/batchWrite", {"edits": [{
                "keyPath": "hooks.state", "mergeStrategy": "upsert",
                "value": {hooks["pre"]["key"]: {"enabled": False}}}]})
            assert not _ours(app)["pre"]["enabled"], config.read_text()
        row = _row(run_rewind, env)
        assert not row["active"] and row["codex_trust"] == "disabled", row


def test_codex_project_trust_in_status(tmp_path: Path, home: Path, run_rewind) -> None:
    """A project's hooks need the project trusted as well (Codex's config, checked by the
    real Codex in test_hooks_agents.test_project_level_hooks_run)."""
    user = tmp_path / "user"
    codex_home = user / ".codex"
    codex_home.mkdir(parents=True)
    project = tmp_path / "app"
    project.mkdir()
    env = {"HOME": str(user)}
    out = run_rewind("hooks", "install", "codex", "--project", str(project), env=env,
                     check=True).stdout
    assert f'[projects."{project}"]' in out and "/hooks" in out, out
    row = _row(run_rewind, env, "--project", str(project))
    assert row["codex_trust"] == "untrusted" and f'[projects."{project}"]' in row["problem"]
    (codex_home / "config.toml").write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')
    row = _row(run_rewind, env, "--project", str(project))
    assert row["codex_trust"] == "untrusted" and "projects" not in row["problem"], row
    # A config.toml Codex itself could not read either leaves the verdict at untrusted.
    (codex_home / "config.toml").write_text("[oops\n")
    row = _row(run_rewind, env, "--project", str(project))
    assert row["codex_trust"] == "untrusted", row


def test_codex_project_hooks_trust_as_codex_sees_it(tmp_path: Path, home: Path,
                                                    run_rewind) -> None:
    if binary("codex") is None:
        pytest.skip(missing("codex"))
    project = tmp_path / "proj"
    project.mkdir()
    with ModelServer([Say("Nothing to do.")], project=str(project)) as srv:
        codex = Agent("codex", tmp_path / "agent-home", project, srv, bypass_hook_trust=False)
        env = {k: v for k, v in codex.env().items() if k in ("HOME", "CODEX_HOME")}
        run_rewind("hooks", "install", "codex", "--project", str(project), env=env, check=True)
        with open(Path(env["CODEX_HOME"]) / "config.toml", "a") as fh:
            fh.write(f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
        with CodexApp(codex) as app:
            hooks = _ours(app)   # Codex found the project's hooks, under the keys we compute
            for hook in hooks.values():
                assert hook["key"].startswith(f"{project / '.codex' / 'hooks.json'}:"), hook
            assert _statuses(app) == {"untrusted"}
            assert _row(run_rewind, env, "--project", str(project))["codex_trust"] == "untrusted"
            for hook in hooks.values():
                app.trust(hook)
            assert _statuses(app) == {"trusted"}
        row = _row(run_rewind, env, "--project", str(project))
        assert row["active"] and row["codex_trust"] == "trusted", row
