"""Help (issue 15): examples in every --help, a man page that `man rewind` finds (not
libc's rewind(3)) and that matches the commands, and shell completion of checkpoint
numbers, ids and labels."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REWIND

from rewindfs.store import set_label, take

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(REWIND).parent if REWIND else None


def all_commands() -> list[str]:
    from rewindfs.cli.group import load_all

    return sorted(load_all().commands)


@pytest.mark.parametrize("command", ["", *all_commands()])
def test_every_help_has_examples(run_rewind, command):
    proc = run_rewind(*([command] if command else []), "--help", check=True)
    assert "Example" in proc.stdout, proc.stdout
    assert "rewind " in proc.stdout.split("Example", 1)[1]


def generated_files() -> list[str]:
    from rewindfs.cli.help.generated import GENERATED

    return list(GENERATED)


@pytest.mark.parametrize("rel", generated_files())
def test_generated_docs_match_the_commands(rel):
    """man/rewind.1 and docs/cli.md are rendered from the click commands: a committed copy
    that differs from what the commands render now is stale."""
    from rewindfs.cli.group import load_all
    from rewindfs.cli.help.generated import GENERATED

    committed = (ROOT / rel).read_text()
    assert committed == GENERATED[rel](load_all()), f"{rel} is stale: run scripts/gen_docs"
    heading = {"man/rewind.1": ".SS rewind {}", "docs/cli.md": "### `rewind {}`",
               "rewindfs/cli/help/helptexts.txt": "Usage: rewind {} "}[rel]
    for command in all_commands():
        assert heading.format(command) in committed.replace(r"\-", "-"), command


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_rewind_finds_ours(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "MANOPT")}
    env["PATH"] = f"{VENV_BIN}:/usr/bin:/bin"
    env["HOME"] = str(tmp_path)
    found = subprocess.run(["man", "-w", "rewind"], env=env, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).resolve() == (ROOT / "man" / "rewind.1").resolve()
    # the documented way when the venv is not on PATH
    env["PATH"] = "/usr/bin:/bin"
    env["MANPATH"] = f"{VENV_BIN.parent / 'share' / 'man'}:"
    found = subprocess.run(["man", "-w", "rewind"], env=env, capture_output=True, text=True)
    assert Path(found.stdout.strip()).resolve() == (ROOT / "man" / "rewind.1").resolve()
    page = subprocess.run(["man", "-P", "cat", "rewind"], env={**env, "MANWIDTH": "100"},
                          capture_output=True, text=True)
    assert "rewind restore" in page.stdout and "EXIT STATUS" in page.stdout


def complete(run_rewind, words: str, cwd, shell: str = "bash") -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    proc = run_rewind(env={"_REWIND_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
                           "COMP_CWORD": str(cword)}, cwd=cwd, check=True)
    return [line.split(",", 1)[1] for line in proc.stdout.splitlines() if "," in line]


def test_completion_of_numbers_ids_and_labels(run_rewind, project, store, tmp_path):
    ids = []
    for i in range(3):
        (project / "a.txt").write_text(f"{i}\n")
        ids.append(take(store, project, f"c{i}").commit)
    set_label(store, store.project(project).h16, "before-refactor", ids[0])
    offered = complete(run_rewind, "rewind restore ", project)
    assert {"1", "2", "3", "latest", "before-refactor", ids[2][:8]} <= set(offered)
    # ("befo": "bef" alone is hex, the start of one checkpoint id in ~1,400 runs' three)
    assert complete(run_rewind, "rewind diff befo", project) == ["before-refactor"]
    assert complete(run_rewind, f"rewind show {ids[1][:5]}", project) == [ids[1][:8]]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # -C given earlier on the line picks the project
    assert "before-refactor" in complete(run_rewind, f"rewind cat -C {project} ", elsewhere)
    assert "restore" in complete(run_rewind, "rewind res", project)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_for_each_shell(run_rewind, shell):
    script = run_rewind("completion", shell, check=True).stdout
    assert "_REWIND_COMPLETE" in script


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_loads_the_completion_script(run_rewind, tmp_path):
    script = run_rewind("completion", "bash", check=True).stdout
    (tmp_path / "c.sh").write_text(script)
    proc = subprocess.run(["bash", "-c", f"source {tmp_path / 'c.sh'} && complete -p rewind"],
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert proc.returncode == 0 and "rewind" in proc.stdout, proc.stderr
