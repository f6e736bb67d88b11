"""Each command imports what it uses and nothing else (issue 32): the modules a real
`rewind` process imports (`python -X importtime`) are held to a declared list, names
not times. A module that creeps into a command's start-up fails here until it is
declared, which is the moment to ask whether that command needs it (import it where it
is used instead: each command pays for its own imports, and a person meets every verb).

Declared per command: the rewindfs modules it may import (COMMON: every command that
reads the store) and, for all of them, the heavy packages none of these may import.
Run off a terminal (colour and the pager are rich's, imported only for them).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REWIND

from rewindfs.store import take

# Never imported by these commands: colour and tables (rich: only on a terminal), the
# terminal UI (textual: `rewind ui` alone), YAML
# (only with a config.yaml), TLS and archives (pygit2 without rewindfs's patch), the
# agents' databases, the mount, logging (rewindfs.lazylog: only once something logs), the
# MCP SDK, the terminal UI.
FORBIDDEN = {"rich", "textual", "yaml", "ssl", "tarfile", "sqlite3", "trio", "pyfuse3",
             "logging", "asyncio", "http", "email", "xml", "multiprocessing", "concurrent",
             # The MCP SDK and what it brings (`rewind mcp` alone: rewindfs.mcpserver.server).
             "mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "starlette"}


def names(*short: str) -> frozenset[str]:
    return frozenset("rewindfs" + (f".{s}" if s else "") for s in short)


COMMON = names(
    "", "cli", "cli.app", "cli.failure", "cli.group", "cli.help", "cli.interrupts",
    "cli.output", "cli.output.feedback", "cli.output.human", "cli.output.term",
    "cli.output.widths", "cli.quick", "cli.watchdog", "config", "errors", "faces", "portable",
    "store", "store.history",
    "store.history.chain", "store.history.labels", "store.history.records",
    "store.history.records.listpage", "store.history.records.recordfile",
    "store.history.records.records", "store.history.records.recordtail",
    "store.history.shallow", "store.history.trailers", "store.objects.durable",
    "store.objects.gitextra", "store.objects.ignore", "store.objects.readfilter",
)
DECLARED: dict[str, frozenset[str]] = {
    "--version": names("", "cli", "cli.interrupts", "cli.quick"),
    "--help": names("", "cli", "cli.interrupts", "cli.quick"),
    "list": COMMON | names(
        "agent", "agent.workdir", "cli.commands.complete", "cli.options", "cli.output.human",
        "cli.output.listing", "cli.output.plain", "cli.output.rowstream", "cli.output.taken",
        "cli.target", "fs", "fs.locate", "store.history.checkpoint",
        "store.history.files.trees",
    ),
    "list --json": COMMON | names(
        "agent", "agent.results", "agent.workdir", "cli.commands.complete", "cli.options",
        "cli.output.human", "cli.output.listing", "cli.output.rowstream", "cli.output.taken",
        "cli.target", "fs", "fs.locate", "restore", "store.history.checkpoint",
        "store.history.files.trees",
    ),
    "show": COMMON | names(
        "agent", "agent.results", "agent.show", "agent.stepbegin", "agent.timeline",
        "agent.workdir", "cli.commands.complete", "cli.options", "cli.target", "restore",
        "restore.paths", "sources", "sources.stepref", "store.history.checkpoint",
        "store.history.files", "store.history.files.trees", "store.history.metadata.actions",
        "store.history.metadata.notes", "store.history.refupdate", "store.history.signature",
        "store.objects", "store.objects.layout", "store.objects.locks", "store.objects.mounts",
        "store.objects.repo",
    ),
    "cat": COMMON | names(
        "agent", "agent.workdir", "cli.commands.complete", "cli.options", "cli.output.human",
        "cli.output.logtable", "cli.output.plain", "cli.output.rowstream", "cli.target",
        "restore", "sources", "sources.stepref", "store.history.files.trees",
        "store.objects.locks", "store.objects.mounts",
    ),
    "diff --stat": COMMON | names(
        "agent", "agent.workdir", "cli.commands.complete", "cli.options", "cli.output.plain",
        "cli.output.taken", "cli.target", "lazylog", "sources", "sources.stepref",
        "store.capture.changes", "store.capture.deepdirs", "store.capture.fileread",
        "store.capture.progress", "store.capture.splitstore", "store.capture.storing",
        "store.capture.workdir", "store.history.checkpoint", "store.history.files.diffstat",
        "store.history.files.trees", "store.history.files.treestats", "store.history.prune",
        "store.history.refupdate", "store.history.signature", "store.history.snapshot",
        "store.history.verdict", "store.objects.firstuse", "store.objects.heal",
        "store.objects.indexfile", "store.objects.mounts", "store.objects.packwrite",
        "store.objects.shadowrepos",
    ),
    "diff 2 1 --stat": COMMON | names(
        "agent", "agent.workdir", "cli.commands.complete", "cli.options", "cli.output.plain",
        "cli.output.taken", "cli.target", "sources", "sources.stepref",
        "store.history.checkpoint", "store.history.files.diffstat",
        "store.history.files.trees", "store.objects.mounts",
    ),
    "log": COMMON | names(
        "agent", "agent.workdir", "cli.commands.complete", "cli.options", "cli.output.human",
        "cli.output.logtable", "cli.output.plain", "cli.output.rowstream", "cli.target",
        "restore", "sources", "sources.stepref", "store.history.files.trees",
        "store.objects.locks", "store.objects.mounts",
    ),
    "status": COMMON | names(
        "cli.output.human", "fs", "fs.lifecycle", "lazylog", "restore",
        "store.history.checkpoint", "store.history.projects", "store.history.verdict",
        "store.maintenance", "store.maintenance.inventory", "store.maintenance.liveset",
        "store.maintenance.objsizes", "store.maintenance.quarantine",
        "store.maintenance.sizes", "store.objects", "store.objects.gitcli",
        "store.objects.indexfile", "store.objects.mounts", "store.objects.repo",
        "store.objects.shadowrepos",
    ),
    "grep": COMMON | names(
        "agent", "agent.workdir", "cli.commands.complete", "cli.options", "cli.output.human",
        "cli.output.logtable", "cli.output.plain", "cli.output.rowstream", "cli.target",
        "sources", "sources.stepref", "store.history.files.trees", "store.objects.locks",
        "store.objects.mounts",
    ),
    "restore --dry-run": COMMON | names(
        "agent", "agent.results", "agent.state", "agent.workdir", "cli.commands.complete",
        "cli.options", "cli.output.human", "cli.output.plain", "cli.target", "lazylog",
        "restore", "restore.apply", "restore.dirfds", "restore.fdtree", "restore.noreplace",
        "restore.paths", "restore.plan", "sources", "sources.stepref", "store.capture",
        "store.capture.changes",
        "store.capture.deepdirs", "store.capture.fileread", "store.capture.progress",
        "store.capture.splitstore", "store.capture.storing", "store.history.checkpoint",
        "store.history.files.treestats", "store.history.metadata.notes", "store.history.prune",
        "store.history.refupdate", "store.history.signature", "store.history.verdict",
        "store.objects", "store.objects.firstuse", "store.objects.heal",
        "store.objects.indexfile", "store.objects.layout", "store.objects.locks",
        "store.objects.mounts", "store.objects.packwrite", "store.objects.repo",
        "store.objects.shadowrepos",
    ),
    # Readiness only: no history, no capture; the hooks' config readers and FUSE's check.
    "doctor": names(
        "", "cli", "cli.app", "cli.failure", "cli.group", "cli.help", "cli.interrupts",
        "cli.output", "cli.output.feedback", "cli.output.human", "cli.output.term",
        "cli.output.widths", "cli.quick", "cli.watchdog", "config", "doctor", "errors",
        "faces", "fs", "fs.lifecycle", "hooks", "hooks.agents", "hooks.configfile",
        "hooks.configrecord",
        "hooks.deadline", "hooks.helper", "hooks.helperwire", "hooks.hooklog",
        "hooks.install", "hooks.isolation", "hooks.payloads", "hooks.plugin", "hooks.runner",
        "portable", "store", "store.objects", "store.objects.durable",
        "store.objects.verify.problems",
    ),
}
ARGS = {
    "--version": ["--version"], "--help": ["--help"], "list": ["list"],
    "list --json": ["list", "--json"], "show": ["show", "1"], "cat": ["cat", "1", "a.txt"],
    "diff --stat": ["diff", "--stat"], "diff 2 1 --stat": ["diff", "2", "1", "--stat"],
    "log": ["log", "a.txt"], "status": ["status"], "grep": ["grep", "needle", "1"],
    "restore --dry-run": ["restore", "--dry-run", "2"], "doctor": ["doctor"],
}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A project with three checkpoints and a change since, in a home of its own."""
    from rewindfs.store import Layout, Store

    root = tmp_path_factory.mktemp("imports")
    home, project = root / "home", root / "proj"
    project.mkdir()
    store = Store(Layout(home / "checkpoints"))
    (project / "b.txt").write_text("needle\n")
    for i in range(3):
        (project / "a.txt").write_text(f"version {i}\n")
        take(store, project, f"step {i}")
    (project / "a.txt").write_text("changed since\n")
    return home, project


def imported(args: list[str], home, project, env) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", REWIND, *args], cwd=project,
                          env={**env, "HERMES_HOME": str(home)}, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return {line.rsplit("|", 1)[1].strip()
            for line in proc.stderr.decode(errors="replace").splitlines()
            if line.startswith("import time:") and "|" in line} - {"imported package"}


@pytest.mark.parametrize("command", list(ARGS))
def test_a_command_imports_what_it_declares(command, history, child_env):
    assert set(ARGS) == set(DECLARED)
    found = imported(ARGS[command], *history, child_env())
    assert "rewindfs.cli" in found  # the run was measured
    ours = {m for m in found if m == "rewindfs" or m.startswith("rewindfs.")}
    undeclared = sorted(ours - DECLARED[command])
    assert not undeclared, f"`rewind {command}` imports undeclared modules: {undeclared}"
    heavy = sorted({m for m in found if m.split(".")[0] in FORBIDDEN})
    assert not heavy, f"`rewind {command}` imports {heavy}"
