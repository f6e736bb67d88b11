"""rewindfs demo: an agent edits a sample project, breaks it, and the user rewinds.

Everything runs against a throwaway HERMES_HOME and project in a temp dir, with
the real `rewind` CLI; nothing in your home directory is touched.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import rewindfs
from rewindfs.cli.group import COMMAND_MODULES

REWIND = shutil.which("rewind", path=os.path.dirname(sys.executable)) or "rewind"


def say(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def run(*args: str, cwd: Path, check: bool = True) -> str:
    shown = " ".join(shlex.quote(a) for a in args)
    print(f"$ {shown}", flush=True)
    proc = subprocess.run([REWIND if args[0] == "rewind" else args[0], *args[1:]], cwd=cwd,
                          text=True, capture_output=True)
    out = (proc.stdout + proc.stderr).rstrip()
    if out:
        print(textwrap.indent(out, "  "), flush=True)
    if check and proc.returncode != 0:
        sys.exit(f"demo: `{shown}` failed with exit code {proc.returncode}")
    return proc.stdout


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def agent_shell(manager, project: Path, command: str) -> None:
    """What a harness does before running an agent's shell command."""
    try:
        from rewindfs.agent.classify import classify
    except ImportError:  # the classifier lands with the agent-integration work
        destructive, why = True, "no classifier installed: assume destructive"
    else:
        destructive, why = classify(command)
    if destructive:
        taken = manager.ensure_checkpoint(str(project), f"before: {command}")
        done = "taken" if taken else "not needed (already checkpointed)"
        print(f"  [harness] destructive ({why}) -> checkpoint {done}")
    subprocess.run(command, shell=True, cwd=project, check=True)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="rewindfs-demo-"))
    home, project = root / "hermes-home", root / "myapp"
    os.environ["HERMES_HOME"] = str(home)
    print(f"rewindfs {rewindfs.__version__} demo in {root}")

    say("a sample project")
    write(project / "pyproject.toml", '[project]\nname = "myapp"\nversion = "0.1.0"\n')
    write(project / "src/myapp/app.py", '''
        def greet(name):
            return f"Hello, {name}!"
        ''')
    write(project / "src/myapp/config.py", "DEBUG = False\nPORT = 8000\n")
    write(project / "README.md", "# myapp\n\nA tiny app.\n")
    write(project / ".env", "API_KEY=not-for-checkpoints\n")
    write(project / "node_modules/left-pad/index.js", "module.exports = 1;\n")
    run("find", ".", "-type", "f", "-not", "-path", "./node_modules/*", cwd=project)

    manager = rewindfs.CheckpointManager(enabled=True)

    say("turn 1, step s1: the agent edits app.py (the harness brackets each model step)")
    manager.new_turn()
    manager.begin_step(str(project), "s1", "turn-1")
    write(project / "src/myapp/app.py", '''
        def greet(name, excited=False):
            mark = "!!" if excited else "!"
            return f"Hello, {name}{mark}"
        ''')
    manager.record_agent_write(str(project), "src/myapp/app.py")
    print(f"  [harness] step s1 changed {manager.end_step(str(project), 's1')['changed_files']}")

    say("a named checkpoint carrying the agent's state (kept outside the file tree)")
    state = {"goal": {"text": "excited greetings"}, "kanban": {"done": ["greet"], "todo": []}}
    made = manager.checkpoint(str(project), "greeting feature done", label="greet-v2",
                              state=state)
    print(f"  [harness] checkpoint {made['short_hash']} labelled {made['label']!r} "
          f"with state {sorted(state)}")

    say("turn 2, step s2: the agent opens a PR, then runs destructive shell commands")
    manager.new_turn()
    manager.begin_step(str(project), "s2", "turn-2")
    manager.record_action(str(project), "github.pr.opened", "1234", "Add excited greetings")
    agent_shell(manager, project, "sed -i 's/PORT = 8000/PORT = 9000/' src/myapp/config.py")
    agent_shell(manager, project, "rm -rf src/myapp && echo 'print(1)' > main.py")
    manager.end_step(str(project), "s2")

    say("the user looks at the checkpoints")
    run("rewind", "list", cwd=project)
    run("rewind", "show", "greet-v2", cwd=project)
    run("rewind", "show", "1", cwd=project)
    run("rewind", "diff", "greet-v2", "1", "--stat", cwd=project)

    if "mount" in COMMAND_MODULES:
        mnt = root / "mnt"
        say("every checkpoint as a read-only directory")
        if run("rewind", "mount", str(mnt), cwd=project, check=False):
            try:
                run("ls", "-la", str(mnt / "myapp"), cwd=project)
                run("ls", "-lR", f"{mnt}/myapp/greet-v2/", cwd=project)
                goal = os.getxattr(mnt / "myapp" / "greet-v2", "user.rewind.state.goal")
                print(f"  (xattr user.rewind.state.goal of greet-v2: {goal.decode()})")
                run("diff", "-r", str(mnt / "myapp" / "greet-v2"), ".", cwd=project, check=False)
                run("touch", str(mnt / "myapp" / "1" / "x"), cwd=project, check=False)
            finally:
                run("rewind", "umount", str(mnt), cwd=project, check=False)

    say("the harness rewinds turn 2 (only files turn 2 changed), then redoes it")
    reverted = manager.revert_to(str(project), "turn-2")
    print(f"  [harness] reverted turns {reverted['turns']}: restored "
          f"{reverted['restored_files']}, deleted {reverted['deleted_files']}")
    run("ls", "-R", "src", cwd=project)
    redone = manager.unrevert(str(project))
    print(f"  [harness] redid turns {redone['turns']}")
    run("ls", cwd=project)

    say("restore the whole project to the labelled checkpoint (the PR is still open!)")
    run("rewind", "restore", "greet-v2", "--dry-run", cwd=project)
    run("rewind", "restore", "greet-v2", "--yes", cwd=project)
    run("find", ".", "-type", "f", "-not", "-path", "./node_modules/*", cwd=project)
    run("cat", "src/myapp/config.py", cwd=project)

    say("changed your mind? undo the restore (and undo the undo)")
    run("rewind", "undo", cwd=project)
    run("ls", cwd=project)
    run("rewind", "undo", cwd=project)
    run("ls", cwd=project)

    say("restore one file from the first checkpoint, by its stable id")
    first = manager.list_checkpoints(str(project))[-1]
    print(f"  (numbers shift as checkpoints are added; {first['short_hash']} never does)")
    run("rewind", "restore", first["short_hash"], "src/myapp/app.py", cwd=project)
    run("cat", "src/myapp/app.py", cwd=project)
    run("rewind", "list", cwd=project)

    say("secrets and dependencies were never captured")
    run("git", f"--git-dir={home}/checkpoints/store", "ls-tree", "-r", "--name-only",
        f"refs/hermes/{rewindfs.store.project_hash(project)}", cwd=project)
    print(f"\ndemo finished; files left in {root}")


if __name__ == "__main__":
    main()
