"""The README's ten-line tour runs as written: each line in a shell, in a project called
myproj, with the default Hermes home (~/.hermes) of a fresh HOME and a real mount."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import force_unmount, make_git_repo, rewind_env

ROOT = Path(__file__).resolve().parents[2]


def tour_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## A ten-line tour", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block, "README.md: the tour has no code block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()
            if line.strip()]


def test_readme_tour_runs_as_written(fuse_usable, tmp_path):
    lines = tour_lines()
    assert len(lines) <= 10 and [ln.split()[0] for ln in lines].count("rewind") >= 6, lines
    home = tmp_path / "user"
    project = home / "myproj"
    make_git_repo(project, {"src/app.py": b"print('v1')\n", "notes.txt": b"notes\n"},
                  commit=False)
    env = rewind_env(None, home, PATH=f"{Path(sys.executable).parent}:"
                                      f"{os.environ.get('PATH', '/usr/bin:/bin')}")

    def run(line: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", line], cwd=project, env=env, capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)

    out: dict[str, subprocess.CompletedProcess] = {}
    try:
        for line in lines:
            out[line] = proc = run(line)
            if line.startswith("diff -r"):  # differences found: exit 1, as diff does
                assert proc.returncode == 1, (line, proc.stdout, proc.stderr)
            else:
                assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
            if line.startswith("rewind checkpoint"):
                # what an agent does next: an edit and a deletion the tour then takes back
                (project / "src" / "app.py").write_text("print('v2')\n")
                (project / "notes.txt").unlink()
    finally:
        force_unmount(home / ".hermes" / "mnt")

    def output(prefix: str) -> str:
        return next(p.stdout for line, p in out.items() if line.startswith(prefix))

    assert "before refactor" in output("rewind list")
    assert "src/app.py" in output("rewind diff") and "notes.txt" in output("rewind diff")
    assert {"notes.txt", "src"} <= set(output("ls ").split())
    assert "notes.txt" in output("diff -r")
    # the last restore put notes.txt back and `undo` took it away again; app.py stays v1
    # from the single-file restore before it
    assert (project / "src" / "app.py").read_text() == "print('v1')\n"
    assert not (project / "notes.txt").exists()
    assert not os.path.ismount(home / ".hermes" / "mnt")
