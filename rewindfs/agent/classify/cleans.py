"""Which `git clean` a command line runs, if any: what it deletes is what git does not
track, and of that no checkpoint holds what the excludes leave out (node_modules, build
output, .env): the hooks say so in their answer (hooks.leftout).

Read with the classifier's lexer and its prefixes: `git clean` as any simple command of the
line, also behind `sudo`, `env X=1`, `timeout 10` (classify.prefixes). A dry run (`-n`)
deletes nothing.
"""

from __future__ import annotations

import re

from rewindfs.agent.classify.options import option_names, scan, subcommand
from rewindfs.agent.classify.prefixes import PREFIXES
from rewindfs.agent.classify.shell_lexer import Lexer, ParseError, split_commands

PLAIN, IGNORED_TOO, ONLY_IGNORED = "", "x", "X"   # git clean, git clean -x, git clean -X
_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "elif", "else", "do", "while", "until",
                       "time"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_GIT_GLOBAL_VALUE_OPTIONS = ("--git-dir", "--work-tree", "--namespace", "--config-env",
                             "--super-prefix")


def git_clean(command: str) -> str | None:
    """PLAIN, IGNORED_TOO or ONLY_IGNORED for the `git clean` the command runs (the widest
    when it runs several); None when it runs none (or only dry runs), or cannot be read."""
    try:
        commands = split_commands(Lexer(command).run())
    except (ParseError, RecursionError):
        return None
    found: set[str] = set()
    for simple in commands:
        argv = _program([word.text for word in simple.words])
        if argv and argv[0].rsplit("/", 1)[-1] == "git":
            mode = _mode(argv[1:])
            if mode is not None:
                found.add(mode)
    for mode in (IGNORED_TOO, ONLY_IGNORED, PLAIN):
        if mode in found:
            return mode
    return None


def _program(argv: list[str]) -> list[str]:
    """The argv of the program a simple command runs, past keywords (`!`, `then`),
    assignments (`X=1`) and prefixes that run another command."""
    for _ in range(16):   # sudo env timeout nice ... : a few at most
        while argv and (argv[0] in _KEYWORDS or _ASSIGNMENT.match(argv[0])):
            argv = argv[1:]
        peel = PREFIXES.get(argv[0].rsplit("/", 1)[-1]) if argv else None
        if peel is None:
            return argv
        argv = peel(argv[1:])
    return []


def _mode(args: list[str]) -> str | None:
    sub, rest = subcommand(args, short_value="Cc", long_value=_GIT_GLOBAL_VALUE_OPTIONS)
    if sub != "clean":
        return None
    names = option_names(scan(rest, short_value="e", long_value=("--exclude",))[0])
    if names & {"-n", "--dry-run"}:
        return None
    return IGNORED_TOO if "-x" in names else ONLY_IGNORED if "-X" in names else PLAIN
