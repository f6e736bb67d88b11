"""Start-up (issue 21): `rewind --version` and `--help` answered without click, exactly as
click would answer; each command importing only what it uses. The guards here are on
which modules a process imports (`python -X importtime`), never on how long it takes."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import click
import forkrun
import pytest
from conftest import REWIND

from rewindfs import __version__
from rewindfs.cli import group, quick

HEAVY = ("click", "rich", "pygit2", "yaml", "rewindfs.store", "rewindfs.config",
         "rewindfs.agent", "importlib.metadata")


def imported(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
             stdin: bytes | None = None) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules `rewind ARGS` imports (as `-X importtime` lists them) and the process."""
    proc = subprocess.run([sys.executable, "-X", "importtime", REWIND, *args],
                          capture_output=True, env={**os.environ, **(env or {})}, cwd=cwd,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          timeout=60)
    names = set()
    for line in proc.stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "rewindfs.cli" in names, proc.stderr.decode()[-2000:]
    return names, proc


def heavy(names: set[str]) -> set[str]:
    return {n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY)}


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"], ["list", "--help"],
                                  ["restore", "-h"]])
def test_version_and_help_import_no_click_nor_store(args, child_env):
    env = child_env(COLUMNS="100")
    names, proc = imported(*args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == click_help(args, env).stdout  # and print click's answer
    assert heavy(names) == set(), sorted(heavy(names))
    ours = {n for n in names if n.startswith("rewindfs")}
    assert ours <= {"rewindfs", "rewindfs.cli", "rewindfs.cli.interrupts",
                    "rewindfs.cli.quick"}, sorted(ours)


def test_version_is_the_installed_one():
    names, proc = imported("--version")
    assert proc.stdout.decode() == f"rewind, version {version('rewindfs')}\n"
    assert __version__ == version("rewindfs")


def click_help(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """What click itself prints for `rewind ARGS` (the group run directly, no cli.quick;
    forked from the tests' fork server: what it prints is the point, not its start-up)."""
    return forkrun.run(REWIND, args, env=env, timeout=60, entry="group")


HELP_CASES = [[*path, flags[-1]] for path, (flags, _text) in quick.help_texts()[1].items()] + \
    [["-h"], ["cat", "-h"]]


@pytest.mark.parametrize("args", HELP_CASES, ids=" ".join)
def test_quick_help_is_what_click_prints(args, child_env, monkeypatch):
    """The pre-rendered help (cli.helptexts) is byte for byte what click prints, at every
    width it is used for; on a narrower terminal click answers itself. Both are forked
    from the tests' fork server (the quick one runs the launcher's code, cli.main): what
    they print is the point here; which modules an exec'd start-up imports is
    test_version_and_help_import_no_click_nor_store's."""
    for columns in ("80", "100"):
        monkeypatch.setenv("COLUMNS", columns)
        assert quick.answer(args, quick.PROG) is not None, columns  # cli.quick answers it
        env = child_env(COLUMNS=columns)
        want = click_help(args, env)
        assert want.returncode == 0 and not want.stderr, want.stderr
        got = forkrun.run(REWIND, args, env=env, timeout=60)
        assert (got.returncode, got.stdout, got.stderr) == (0, want.stdout, ""), columns


def test_narrow_terminal_help_comes_from_click(child_env):
    env = child_env(COLUMNS="60")
    names, proc = imported("list", "--help", env=env)
    assert "click" in names
    assert proc.stdout.decode() == click_help(["list", "--help"], env).stdout


@pytest.mark.parametrize("columns", ["", "0", "x", "40", "52", "79", "80", "81", "300"])
def test_help_width_is_clicks(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    assert quick.help_width() == click.formatting.HelpFormatter().width


def test_no_quick_answer_for_other_names_or_completion(monkeypatch):
    assert quick.answer(["--help"], "rewind") is not None
    assert quick.answer(["--help"], "rw") is None  # click prints the name it was called by
    assert quick.answer(["list", "x", "--help"], "rewind") is None
    assert quick.answer(["list", "--version"], "rewind") is None
    monkeypatch.setenv("_REWIND_COMPLETE", "bash_complete")
    assert quick.answer(["--help"], "rewind") is None


def test_the_command_table_names_every_command():
    """cli.group imports a command's module only when it runs, from its COMMANDS table:
    every command of every module is in it, under its own module."""
    cli_dir = Path(group.__file__).parent / "commands"
    found = {}
    for path in sorted(cli_dir.glob("*.py")):
        if "\nCOMMANDS = [" in path.read_text():
            module = importlib.import_module(f"rewindfs.cli.commands.{path.stem}")
            found.update({c.name: path.stem for c in module.COMMANDS})
    assert found == group.COMMANDS
