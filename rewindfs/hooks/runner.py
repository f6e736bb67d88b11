"""Which Python an installed hook runs, and what that Python is: the `rewind` tool
(scripts/install), a checkout's .venv (scripts/setup), or another install.

A hook names its interpreter by path (hooks.agents.hook_argv: the `rewind` that installed
it). From the tool that is the tool's own environment (`~/.local/share/uv/tools/rewindfs/
bin/python`), which stays where it is across upgrades; from a checkout it is the
checkout's, which works as long as the checkout does. A hook whose interpreter is gone
(a deleted checkout, an uninstalled tool) cannot run: `rewind hooks status` says so.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from rewindfs.hooks.agents import MARK

TOOL_RECEIPT = "rewindfs-install.json"   # written into the tool's environment by install


def python_of(command: str) -> str | None:
    """The interpreter of a hook command of rewindfs's (None: not one of ours)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    return argv[0] if argv and MARK in argv and "-m" in argv else None


def isolated(command: str) -> bool:
    """Whether the command starts Python isolated from the project (hooks.isolation)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    flags = argv[1:argv.index("-m")] if "-m" in argv else []
    return "-I" in flags or {"-E", "-P"} <= set(flags)


def plugin_command(raw: bytes) -> str | None:
    """The command a plugin file of rewindfs's runs (its `// Command:` line)."""
    for line in raw.decode("utf-8", "replace").splitlines()[:5]:
        if line.startswith("// Command: "):
            return line[len("// Command: "):]
    return None


def what(python: str) -> str:
    """What the interpreter at `python` is, in a few words."""
    prefix = Path(python).parent.parent
    if (prefix / TOOL_RECEIPT).exists():
        return f"the rewind tool ({prefix})"
    if prefix.name == ".venv" and (prefix.parent / "pyproject.toml").exists() and \
            (prefix.parent / "rewindfs").is_dir():
        return f"the checkout at {prefix.parent}"
    return python


def problem(agent: str, command: str, current: str) -> str:
    """Why the installed hook `command` would not run as install writes it now (`current`);
    empty when it does, whichever rewindfs installed it."""
    if command == current:
        return ""
    if not isolated(command):
        return (f"installed without isolation from the project (by an older rewindfs): run "
                f"`rewind hooks install {agent}` again")
    python = python_of(command)
    if python is None or not os.access(python, os.X_OK):
        return (f"its Python {python} is gone (a removed checkout or tool?): run "
                f"`rewind hooks install {agent}` again")
    return ""
