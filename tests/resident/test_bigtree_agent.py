"""A big repository protected by default (issue 43): the real Claude Code (offline, against
the scripted model server) works in a 200,000-file project with the hooks `rewind hooks
install` writes and no setting changed. Its session start has the resident process watch
the project and capture it in the background; the destructive commands that follow are
checkpointed, each from the watch's changed paths (not a walk of the tree: the first one
too, thanks to that capture), and each checkpoint restores what its command destroyed,
byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from agentsim import ModelServer, Say, Shell
from agentsim.clis import Agent, binary, missing

pytestmark = [pytest.mark.usefixtures("no_helper_left"), pytest.mark.long]

FILES, PER_DIR = 200_000, 500
FIRST_CAPTURE = 600   # seconds the session's first capture may take (a loaded machine)


def make_tree(root: Path) -> None:
    """FILES small files, PER_DIR to a folder: src/d<i>/f<j>.txt."""
    for d in range(FILES // PER_DIR):
        folder = root / "src" / f"d{d}"
        folder.mkdir(parents=True)
        for j in range(PER_DIR):
            (folder / f"f{j}.txt").write_bytes(f"{d}/{j}\n".encode() * (1 + j % 7))


def digest(root: Path) -> tuple[int, str]:
    """(how many files under src/, one hash of every path and its bytes)."""
    h, count = hashlib.sha256(), 0
    for top, dirs, files in os.walk(root / "src"):
        dirs.sort()
        for name in sorted(files):
            path = Path(top) / name
            h.update(os.fsencode(path.relative_to(root)) + b"\0" + path.read_bytes())
            count += 1
    return count, h.hexdigest()


def test_claude_code_in_a_200000_file_project_is_protected_by_default(
        tmp_path: Path, home: Path, run_rewind) -> None:
    if binary("claude-code") is None:
        pytest.skip(missing("claude-code"))
    project = tmp_path / "big"
    project.mkdir()
    (project / "package.json").write_text("{}\n")
    make_tree(project)
    before = digest(project)
    assert before[0] == FILES
    commands = ["rm -rf src/d0", "python3 -c \"import shutil; shutil.rmtree('src/d1')\""]
    captured: list[dict] = []

    def first_answer_after_the_capture(answered: int) -> None:
        """The model's first answer waits until the session's start has captured the tree
        (as a person's prompt and a model's thinking give it time to): shown done, in the
        background, before the first command is asked for."""
        if answered:
            return
        from rewindfs.resident.source import ask

        end = time.monotonic() + FIRST_CAPTURE
        while time.monotonic() < end:
            found = [p for p in (ask({"kind": "status"}) or {}).get("projects", [])
                     if p.get("root") == str(project)]
            if found and found[0].get("state") == "ready" and found[0].get("base"):
                captured.append(found[0])
                return
            time.sleep(0.2)

    with ModelServer([*map(Shell, commands), Say("Done.")], project=str(project),
                     gate=first_answer_after_the_capture) as srv:
        agent = Agent("claude-code", tmp_path / "agent-home", project, srv)
        run_rewind("hooks", "install", "claude-code", env={"HOME": agent.env()["HOME"]},
                   check=True)
        settings = json.loads((tmp_path / "agent-home" / ".claude" / "settings.json")
                              .read_text())
        assert "SessionStart" in settings["hooks"], settings   # the first capture early
        run = agent.run("clean up two folders", timeout=300)
    log = (home / "rewind-hooks" / "hook.log").read_text(errors="replace")
    assert run.returncode == 0, (run.stderr[-2000:], srv.describe(), log[-3000:])
    assert not (project / "src" / "d0").exists() and not (project / "src" / "d1").exists()
    # The session's start captured the whole tree before the first command (a walk: the
    # watch had no capture to build on yet), and nothing was skipped or failed.
    assert captured and captured[0]["walks"] >= 1, (captured, log[-3000:])
    assert " skipped " not in log and " error " not in log, log[-3000:]
    # Every checkpoint of the session read only what the watch saw change: the first
    # one too, the session's start having captured the whole tree before it.
    lines = [ln for ln in log.splitlines() if "(before: " in ln or "(after: " in ln]
    assert len(lines) == 4 and all("read only what changed (watch)" in ln for ln in lines), \
        log[-3000:]
    [first_line] = [ln for ln in lines if f"(before: {commands[0]};" in ln]
    assert " info checkpoint of " in first_line, first_line   # taken (not "unchanged")

    listed = json.loads(run_rewind("list", "--json", cwd=project, check=True).stdout)
    by_reason = {cp["reason"]: cp for cp in listed}
    # The state before each command: the first's before; the second's is the first's after
    # (nothing changed in between: the second's before recorded no checkpoint of its own).
    first, second = by_reason[f"before: {commands[0]}"], by_reason[f"after: {commands[0]}"]
    # The second command's holds src/d1 and not src/d0 (already gone).
    run_rewind("restore", str(second["number"]), "--yes", cwd=project, check=True,
               timeout=300)
    assert (project / "src" / "d1").is_dir() and not (project / "src" / "d0").exists()
    # The first one's brings back everything, byte for byte.
    number = next(cp["number"] for cp in json.loads(run_rewind(
        "list", "--json", cwd=project, check=True).stdout) if cp["hash"] == first["hash"])
    run_rewind("restore", str(number), "--yes", cwd=project, check=True, timeout=300)
    assert digest(project) == before
