"""`rewind doctor` (issue 35): one line per concern, each problem with the command that
fixes it; exit 0 when nothing blocks checkpoints, 1 when something does. Real `rewind`
processes on real stores and real agent config files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest


def doctor(run_rewind, *args: str, env: dict[str, str] | None = None):
    done = run_rewind("doctor", *args, env=env)
    assert done.returncode in (0, 1), done.stderr
    return done


def checks(done) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def test_a_ready_machine_exits_0_and_names_every_concern(run_rewind, project, home):
    run_rewind("checkpoint", "-m", "one", cwd=project, check=True)
    done = doctor(run_rewind, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["ready"]
    found = checks(done)
    assert {"rewind", "pygit2", "pyfuse3", "fuse", "store", "helper", "claude-code",
            "codex", "gemini", "cursor", "opencode", "kilo"} <= set(found)
    assert found["store"]["detail"].startswith(f"{home}/checkpoints/store: ")
    assert "never checked" in found["store"]["detail"] and found["store"]["fix"] == "rewind check"
    assert found["codex"] == {"name": "codex", "status": "off", "detail": "no hook",
                              "fix": "rewind hooks install codex"}
    run_rewind("check", check=True)
    # (just checked: "now", or a few seconds ago on a loaded machine; not "never")
    detail = checks(doctor(run_rewind, "--json"))["store"]["detail"]
    assert re.search(r"checked (now|\d+s ago): no damage", detail), detail
    plain = doctor(run_rewind).stdout.splitlines()
    assert plain[0] == "rewind doctor: ready: nothing blocks checkpoints"
    assert any(line.startswith("--    codex ") and "(fix: rewind hooks install codex)" in line
               for line in plain), plain


def test_a_hook_whose_python_is_gone_blocks_checkpoints(run_rewind, user_home, tmp_path):
    """A hook installed from a checkout that was deleted since: FAIL, exit 1, and the fix."""
    run_rewind("hooks", "install", "claude-code", check=True)
    settings = user_home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    hook = data["hooks"]["PreToolUse"][0]["hooks"][0]
    gone = tmp_path / "deleted-checkout" / ".venv" / "bin" / "python"
    hook["command"] = hook["command"].replace(hook["command"].split()[0], str(gone), 1)
    settings.write_text(json.dumps(data))
    done = doctor(run_rewind, "--json")
    assert done.returncode == 1 and not json.loads(done.stdout)["ready"]
    row = checks(done)["claude-code"]
    assert row["status"] == "fail" and str(gone) in row["detail"] and "is gone" in row["detail"]
    assert row["fix"] == "rewind hooks install claude-code"
    status = json.loads(run_rewind("hooks", "status", "--json", check=True).stdout)
    [mine] = [r for r in status["agents"] if r["agent"] == "claude-code"]
    assert mine["installed"] and not mine["active"] and mine["python"] == str(gone)
    run_rewind("hooks", "install", "claude-code", check=True)   # the fix it named
    assert doctor(run_rewind).returncode == 0


def test_a_store_found_damaged_says_how_to_repair(run_rewind, project, store_dir):
    run_rewind("checkpoint", "-m", "one", cwd=project, check=True)
    loose = next(p for p in (store_dir / "objects").glob("??/*") if p.is_file())
    os.chmod(loose, 0o644)
    loose.write_bytes(loose.read_bytes()[:5])   # truncated
    assert run_rewind("check").returncode == 3   # the scenario: `rewind check` saw it
    row = checks(doctor(run_rewind, "--json"))["store"]
    assert row["status"] == "warn" and "damaged" in row["detail"]
    assert row["fix"] == "rewind check --repair"


@pytest.mark.parametrize("name", ["ho\x1b[31mme", "ho\nme"])
def test_what_reaches_the_terminal_is_escaped(name, run_rewind, tmp_path: Path):
    strange = tmp_path / name
    strange.mkdir()
    done = doctor(run_rewind, env={"HERMES_HOME": str(strange)})
    assert "\x1b" not in done.stdout and "ho\nme" not in done.stdout
    assert "\\x1b[31m" in done.stdout or "ho\\x0ame" in done.stdout, done.stdout
