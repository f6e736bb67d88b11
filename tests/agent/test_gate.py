"""The hooks' gate (issue 47, "Fail safe by default"): a checkpoint before every shell
command unless it is known to change nothing.

- Every command of issue 47's list of commands the old classifier judged harmless, each
  of which destroyed files when run, gets a checkpoint.
- The classifier's table as a property of the gate: every command it calls destructive
  gets a checkpoint.
- The read-only forms agents run most (ls, cat, grep, git status ...) get none.
- A property test: for random command lines built from harmless and harmful pieces, the
  gate either checkpoints, or the line - run for real by bash in a scratch tree - changes
  nothing there and runs only allowlisted programs.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_classify import DESTRUCTIVE

from rewindfs.agent.classify import readonly
from rewindfs.hooks.gate import due

# Issue 47, item 2: judged harmless by the classifier, each destroyed files when run.
ISSUE_47_HARMLESS_BUT_DESTRUCTIVE = [
    "bash -euo pipefail -c 'rm g'",
    "perl -lpi -e 's/a/b/' f",
    "perl -0pi -e 's/a/b/' f",
    "perl -pli -e 's/a/b/' f",
    "function f { rm -rf g; }; f",
    "time { rm g; }",
    "bash -s <<EOF\nrm g\nEOF",
    "python3 -c \"import shutil; shutil.rmtree('src')\"",
    "python3 - <<EOF\nimport os; os.remove('g')\nEOF",
    "node -e \"require('fs').rmSync('src', {recursive: true})\"",
    "perl -e 'unlink \"g\"'",
    "vim -es -c '%d' -c wq f",
    "ex -sc '%d|x' f",
    "ed -s f <<EOF\n,d\nw\nq\nEOF",
    "sort -o f f",
    "uniq f f",
    "xxd -r x.hex f",
    "openssl enc -aes-256-cbc -in a -out f -k k",
    "zstd -d -f a.zst -o f",
    "zstd --rm f",
    "sqlite3 app.db 'DROP TABLE users'",
    "zip -m a.zip f",
    "tar --remove-files -cf a.tar f",
    "flock L rm g",
    "setsid rm g",
    "strace -o /dev/null rm g",
    "script -qc 'rm g' /dev/null",
    "su -c 'rm g'",
    "runuser -- rm g",
    "watch -g 'rm g'",
    "make clean",
    "npm run clean",
    "source cleanup.sh",
    "echo 'rm g' | bash",
    "cat a 1<>f",
]

READ_ONLY = [
    "", "# rm -rf /", "ls", "ls -la src", "cat README.md", "head -n 20 f", "tail -f app.log",
    "wc -l f", "pwd", "grep -rn foo src", "rg -n 'def main' .", "git status",
    "git status --porcelain", "git log --oneline -5", "git diff HEAD~1", "git show HEAD:f",
    "git -C sub log", "git --no-pager diff", "git branch -a", "git stash list",
    "git rev-parse --show-toplevel", "find . -name '*.py'", "find . -type f | wc -l",
    "ls | grep x | head", "cd src && ls", "echo hi", "echo $(git rev-parse HEAD)",
    "cat <<'EOF'\nrm -rf /\nEOF", "ls 2>/dev/null", "ls > /dev/null 2>&1", "which python3",
    "sort f", "uniq -c f", "diff a b", "stat f", "du -sh .", "LC_ALL=C sort f",
    "test -f x && echo yes", "[ -d src ] || echo no", "for f in *.py; do wc -l \"$f\"; done",
    "command -v rg", "env", "date +%s", "jq .name package.json",
]

NOT_READ_ONLY = [
    "ls > out.txt", "echo x >> log", "cat a | tee f", "find . -delete",
    "find . -exec rm {} +", "git -c core.pager='rm -rf x' log", "git diff --output=f",
    "git branch -D old", "git stash", "git config user.name x", "git tag -d v1",
    "echo ${x:-$(rm f)}", "echo $(( a[$(rm f)] ))", "./ls", "$CMD x", "PATH=. ls",
    "GIT_EXTERNAL_DIFF=./x git diff", "env rm x", "date -s 2020-01-01", "tree -o f",
    "rg --pre ./x foo", "rg --hostname-bin ./x foo", "tree -R -H .", "hostname -Fx",
    "sort -uo f f", "file -C", "echo 'unclosed", "ls; rm x",
    "ls $(rm x)", "diff <(ls) >(rm x)", "cat < in > out", "git grep -O foo", "exec ls",
]


@pytest.mark.parametrize("command", ISSUE_47_HARMLESS_BUT_DESTRUCTIVE)
def test_issue_47_commands_are_checkpointed(command: str) -> None:
    assert due(command), command


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_the_classifiers_destructive_table_is_checkpointed(command: str) -> None:
    assert due(command), command


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_forms_are_not(command: str) -> None:
    assert not due(command), command


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_writing_forms_of_allowlisted_programs_are(command: str) -> None:
    assert due(command), command


def test_only_destructive_setting_gates_on_the_classifier(home: Path, monkeypatch) -> None:
    assert due("python3 -c 'print(1)'") and due("make test")
    (home / "config.yaml").write_text("checkpoints:\n  only_destructive: true\n")
    assert not due("python3 -c 'print(1)'") and not due("make test")
    assert due("rm -rf build") and due("git reset --hard")
    assert not due("ls")
    (home / "config.yaml").write_text("checkpoints:\n  only_destructive: maybe\n")
    assert due("make test")   # a setting that does not read: the safe side
    (home / "config.yaml").unlink()
    monkeypatch.setenv("REWIND_ONLY_DESTRUCTIVE", "1")
    assert not due("make test") and due("rm x")


# -- the property ------------------------------------------------------------------------

# Pieces a command line is built of: read-only ones, and ones that write (every one of
# them touches only the scratch tree's own names, so a wrong "harmless" is caught there).
PROGRAMS = ["ls", "ls -la", "cat f", "head -n1 f", "wc -l f", "grep a f", "sort f",
            "sort -o f f", "uniq f", "uniq f g", "find .", "find . -name f -delete",
            "echo hi", "printf '%s' x", "pwd", "true", "cd d", "stat f", "cmp f g",
            "diff f g", "rm g", "touch n", "mkdir m", "cp f g", "mv g h", "tee g",
            "sed -i s/a/b/ f", "python3 -c 'open(\"f\",\"w\")'", "chmod 600 f", "truncate -s0 f",
            "tac f", "cut -c1 f", "tr a b", "dd of=g", "ln -sf f g", "date", "env", "ls d"]
JOINS = [" ; ", " && ", " || ", " | ", "\n", " & "]
WRAPS = ["{}", "( {} )", "{{ {} ; }}", "echo $({})", "x=$({})", "if true; then {}; fi",
         "for i in 1; do {}; done", "bash -c {q}", "{} > g", "{} >> g", "{} 2>/dev/null",
         "{} > /dev/null", "{} < f", "cat <<EOF\n$({})\nEOF", "{} 1<>g", "time {}"]


@st.composite
def command_lines(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        piece = draw(st.sampled_from(PROGRAMS))
        wrap = draw(st.sampled_from(WRAPS))
        parts.append(wrap.format(piece, q=shlex.quote(piece)))
        parts.append(draw(st.sampled_from(JOINS)))
    return "".join(parts[:-1])


def _tree(root: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st_ = path.lstat()
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            out[str(path.relative_to(root))] = (st_.st_mode, st_.st_mtime_ns,
                                                hashlib.sha256(data).hexdigest())
    return out


def _run_traced(command: str, root: Path) -> list[str]:
    """Runs `command` with bash in `root`; the programs it executed (strace's execve)."""
    trace = root.parent / f"{root.name}.trace"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o",
                    str(trace), "bash", "-c", command], cwd=root, timeout=20,
                   capture_output=True, stdin=subprocess.DEVNULL,
                   env={"PATH": os.environ["PATH"], "HOME": str(root), "LANG": "C"})
    calls = [line for line in trace.read_text().splitlines() if "execve(" in line]
    return [line.split('execve("', 1)[1].split('"', 1)[0] for line in calls
            if not line.rstrip().endswith("ENOENT (No such file or directory)")][1:]


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace to see what a command runs")
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=command_lines())
def test_the_gate_checkpoints_or_the_command_changes_nothing(command: str,
                                                             tmp_path_factory) -> None:
    if due(command):
        return
    # Not checkpointed: run for real, it changes nothing in the tree it runs in, and every
    # program it executed (strace says which, not the gate's reading) is on the allowlist.
    root = tmp_path_factory.mktemp("scratch")
    (root / "d").mkdir()
    (root / "f").write_text("b\na\nb\n")
    (root / "g").write_text("g\n")
    before = _tree(root)
    ran = _run_traced(command, root)
    assert _tree(root) == before, command
    allowed = readonly._ANY_ARGS | set(readonly._RULES)
    assert all(os.path.basename(p) in allowed for p in ran), (command, ran)
