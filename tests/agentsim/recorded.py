"""One real session of Kilo or OpenCode, recorded once per test run, for the tests that only
read a finished session (tests/sources, and test_agentsim's proof that the CLI runs).

A Kilo run costs about ten seconds of CPU (most of it Kilo's own start-up, whatever the
session does) and OpenCode's about four: the suite records each agent's session once and
hands every test that asks a fresh copy of it. The recording is real: the pinned CLI from
npm, two turns of one session (the second continues it, `-c`) against a scripted model
server on 127.0.0.1, creating, editing and deleting files in a git project. What the runs
and the server saw is kept next to it (`facts`), so a test that did not make the recording
still proves it happened.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import make_git_repo

from agentsim import ModelServer, Say, Shell, Write
from agentsim.clis import Agent, binary, missing

MOVES = [Write("new.txt", "created by the agent\n"), Shell("sed -i 's/hello/hello edited/' a.txt"),
         Say("first turn done"), Shell("rm b.txt"), Say("second turn done")]
PROMPTS = (("make changes", False), ("delete b", True))

# The tests that share a recording run on one xdist worker, one after another
# (scripts/test's --dist loadgroup): none waits on the lock while another holds it.
ON_WORKER = {"kilo": pytest.mark.xdist_group("recorded-kilo"),
             "opencode": pytest.mark.xdist_group("recorded-opencode")}


@dataclass
class Recording:
    project: Path
    env: dict[str, str]   # the agent's data home, where its snapshots are
    facts: dict           # each run's exit status and output; the server's requests


def _record(name: str, root: Path) -> dict:
    """One real session of `name`, two turns, in `root` (project/ and agent-home/)."""
    project = root / "project"
    make_git_repo(project, {"a.txt": b"hello\n", "b.txt": b"bye\n"})
    runs = []
    with ModelServer(MOVES, project=str(project)) as server:
        agent = Agent(name, root / "agent-home", project, server)
        for prompt, resume in PROMPTS:
            run = agent.run(prompt, resume=resume)
            runs.append({"returncode": run.returncode, "stdout": run.stdout[-2000:],
                         "stderr": run.stderr[-3000:]})
            assert run.returncode == 0, f"{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
        # (Telemetry and update checks went to the server as proxy and were refused there.)
        facts = {"runs": runs, "requests": [r.protocol for r in server.requests],
                 "stray": server.stray(), "log": server.describe()}
    # The agent really did it: the files changed as scripted.
    assert (project / "new.txt").read_text() == "created by the agent\n"
    assert (project / "a.txt").read_text() == "hello edited\n"
    assert not (project / "b.txt").exists()
    return facts


class Recordings:
    """Each agent's session, recorded by the first test that asks (across the xdist
    workers), handed to each test as a fresh copy in the very place it was made (Kilo and
    OpenCode key their snapshots by the project's path, and OpenCode's name its `.git`).
    The copy is the test's alone until it ends (a lock shared by the workers), so a test may
    change anything in it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.held: list[int] = []

    def __call__(self, name: str) -> Recording:
        if binary(name) is None:
            pytest.skip(missing(name))
        root, pristine = self.base / f"recorded-{name}", self.base / f"recorded-{name}.pristine"
        fd = os.open(self.base / f"recorded-{name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        self.held.append(fd)
        fcntl.flock(fd, fcntl.LOCK_EX)
        shutil.rmtree(root, ignore_errors=True)
        facts_file = self.base / f"recorded-{name}.json"
        if not pristine.exists():
            facts = _record(name, root)
            facts_file.write_text(json.dumps(facts))
            partial = pristine.with_suffix(".partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(root, partial, symlinks=True)
            partial.rename(pristine)
        else:
            shutil.copytree(pristine, root, symlinks=True)
        data = str(root / "agent-home" / ".local" / "share")
        return Recording(root / "project", {"XDG_DATA_HOME": data},
                         json.loads(facts_file.read_text()))

    def close(self) -> None:
        for fd in self.held:
            os.close(fd)  # the recording's lock, for the next test that wants it
        self.held.clear()
