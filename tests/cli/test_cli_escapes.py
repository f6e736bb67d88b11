"""What the store says reaches the terminal escaped, from every command that prints it
(issue 41, case 4): a checkpoint's reason, its agent's trailers and state documents, a
project's directory name and a file's name may hold ESC, OSC and C1 sequences (a tmux
pane title changed by `rewind restore 1 --dry-run`); each is written out
(cli.output.human.visible), never obeyed. Real `rewind` processes on a real store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rewindfs.agent.manager import CheckpointManager
from rewindfs.store import Layout, Store, take

OSC = "\x1b]0;pwned\x07"
CSI = "\x1b[2J"
C1 = "\x9b31m"
NASTY = f"before: {OSC}{CSI}{C1} rm -rf /"
RAW = re.compile("[\x1b\x07\x9b]")
WRITTEN_OUT = ("\\x1b", "\\x9b", "\\033")  # visible's and quote_path's ways
QUIET = {"undo --list", "undo --steps 1"}  # (what they print of the store here is plain)


def raw_controls(text: str) -> list[str]:
    return [text[max(0, m.start() - 20):m.end() + 20] for m in RAW.finditer(text)]


@pytest.fixture
def nasty(home: Path, tmp_path: Path) -> Path:
    """A project whose directory name, checkpoint reasons, agent trailers and a file name
    hold terminal controls; checkpoint 2 is the nasty one, and the working tree has
    changed since (so restores and diffs have something to say). Beside it, a project
    (as nastily named) whose directory was deleted, for prune, status and adopt."""
    workdir = tmp_path / f"proj{OSC}"
    workdir.mkdir()
    (workdir / "app.py").write_text("print('v1')\n")
    (workdir / f"file{CSI}.txt").write_text("odd name\n")
    mgr = CheckpointManager(enabled=True, base=home / "checkpoints")
    mgr.take(str(workdir), NASTY, trailers={"Rewind-Agent": f"agent{OSC}",
                                             "Rewind-Turn": f"turn{C1}",
                                             "Rewind-Session": f"session{CSI}"},
             state={"goal": {"text": f"x{CSI}"}})
    (workdir / "app.py").write_text("print('v2')\n")
    store = Store(Layout.for_home(home))
    take(store, workdir, f"second {C1}{OSC}")
    (workdir / "app.py").write_text("print('v3')\n")
    (workdir / "later.txt").write_text("made since\n")
    (workdir / f"file{CSI}.txt").write_text("odd name, odd edit\n")
    gone = tmp_path / f"gone{CSI}"
    gone.mkdir()
    (gone / "x.txt").write_text("x\n")
    take(store, gone, f"gone {OSC}")
    (gone / "x.txt").unlink()
    gone.rmdir()
    return workdir


RESTORED = ["restore", "2", "-y"]
COMMANDS = [
    ([], ["list"]),
    ([], ["show", "2"]),
    ([], ["diff", "2", "--stat"]),
    ([], ["diff", "2"]),
    ([], ["log", "app.py"]),
    ([], ["grep", "odd"]),
    ([], ["restore", "2", "--dry-run"]),
    ([], ["restore", "2", "app.py", "--dry-run"]),
    ([], RESTORED),
    ([RESTORED], ["undo", "--list"]),
    ([RESTORED], ["undo", "--dry-run"]),
    ([RESTORED], ["undo"]),
    ([RESTORED, RESTORED], ["undo", "--steps", "1"]),
    ([], ["restore", "2", "--to", "{tmp}/out"]),
    ([], ["label", "v1", "2"]),
    ([["label", "v1", "2"]], ["label"]),
    ([], ["status"]),
    ([], ["checkpoint", "-m", NASTY]),
    ([], ["delete", "2", "-f"]),
    ([], ["forget", "-f"]),
    ([], ["prune", "--dry-run"]),
    ([], ["adopt", "{tmp}/gone" + CSI, "{tmp}/moved" + OSC]),
]


def ids(case) -> str:
    return " ".join(case[1]).replace(NASTY, "NASTY").replace(CSI, "CSI").replace(OSC, "OSC")


@pytest.mark.parametrize("case", COMMANDS, ids=ids)
def test_store_text_is_written_out_never_obeyed(run_rewind, nasty: Path, tmp_path: Path,
                                                case):
    (tmp_path / f"moved{OSC}").mkdir()
    before, args = case
    for prep in before:
        run_rewind(*prep, cwd=nasty, check=True)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = run_rewind(*args, cwd=nasty, env={"COLUMNS": "400"})
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    assert done.stdout.strip(), args  # it printed something (of the store)
    assert raw_controls(done.stdout) == [] and raw_controls(done.stderr) == [], \
        (args, raw_controls(done.stdout), raw_controls(done.stderr))
    if " ".join(args) not in QUIET:  # it printed store text, written out
        assert any(e in done.stdout for e in WRITTEN_OUT), (args, done.stdout)


def test_a_diff_writes_out_a_files_controls(child_env, run_rewind, nasty: Path):
    """A file's lines are shown, never obeyed, on a terminal (tabs kept) and piped."""
    from conftest import REWIND
    from terminal import PtyProcess

    (nasty / "app.py").write_text(f"print('v3')\t# {OSC} title\n")
    proc = PtyProcess([REWIND, "diff", "2", "--no-pager", "-C", str(nasty)],
                      env=child_env(TERM="xterm"))
    proc.expect(r"title")
    assert proc.wait() == 0
    assert b"\x1b]0;pwned" not in proc.output and b"\x07" not in proc.output, proc.output
    assert b"# \\x1b]0;pwned\\x07 title" in proc.plain, proc.plain
    assert b"\\t" not in proc.plain  # a tab stays a tab (the terminal lays it out)
    piped = run_rewind("diff", "2", "--", "app.py", cwd=nasty, check=True)
    assert "# \\x1b]0;pwned\\x07 title" in piped.stdout, piped.stdout
    assert raw_controls(piped.stdout) == []
