"""Where a shell command can reach (`reach`): the directories it runs in, where its git
commands run, and the paths it names - read from the text alone, nothing looked up.

The hooks checkpoint every project in that reach, not just the one the shell starts in
(hooks.scope turns these into projects). It is read the way the gate reads a command
(shell_lexer), in order, so a path is taken relative to the directory it is used in:
after a `cd`/`pushd` in the command, and for git, after `-C DIR` (`--work-tree=DIR` names
the work tree itself). Being generous costs a checkpoint of a project the command might
not touch; being stingy loses work, so:

* every word counts as a path, and so does every piece of a word between characters no
  path is written with (`of=../x`, `'../backend',{...}`, a Python string in `-c` code);
* a word with blanks in it (a `bash -c` script, `su -c`, `watch`, `python -c` code) is
  read again as a command of its own, from the directory it is used in;
* a `cd` counts from the command after it to the end, whatever operator or parenthesis
  comes between (a subshell's `cd` ends with it: counting on only reaches further);
* a line the lexer cannot read is still searched for paths, relative to where it starts.

Bounded: at most MAX_PATHS paths and MAX_DEPTH levels of commands inside words.
"""

from __future__ import annotations

import os
import re

from rewindfs.agent.classify.shell_lexer import Lexer, ParseError, Token, split_commands

MAX_PATHS = 256
MAX_DEPTH = 4
_PIECES = re.compile(r"[^\s'\"`,;:(){}\[\]<>|&=*?!$]+")


class Reach:
    """Absolute, lexically normalised paths (symlinks not followed: hooks.scope does)."""

    __slots__ = ("dirs", "git", "paths")

    def __init__(self) -> None:
        self.dirs: list[str] = []    # where it runs: the start, then each cd's target
        self.git: list[str] = []     # where a git command runs (or the work tree it names)
        self.paths: list[str] = []   # what it names, resolved where it is named

    def add(self, kind: list[str], path: str) -> None:
        if path not in kind and len(self.paths) + len(self.dirs) + len(self.git) < MAX_PATHS:
            kind.append(path)


def reach(command: str, cwd: str, home: str) -> Reach:
    out = Reach()
    out.add(out.dirs, os.path.normpath(cwd))
    _script(command, os.path.normpath(cwd), home, out, 0)
    return out


def _script(text: str, here: str, home: str, out: Reach, depth: int) -> str:
    """Reads `text` run from `here`; the directory it ends in."""
    try:   # (what a failed read added stays: generous costs a checkpoint at most)
        return _tokens(Lexer(text).run(), here, home, out, depth)
    except (ParseError, RecursionError):
        _pieces(text, here, home, out)
        return here


def _tokens(tokens: list[Token], here: str, home: str, out: Reach, depth: int) -> str:
    for command in split_commands(tokens):
        words = [w.text for w in command.words]
        for token in [*command.words, *(t for pair in command.redirects for t in pair)]:
            for sub in token.subs:   # $(...) runs from here, its cd stays inside
                _tokens(sub, here, home, out, depth)
        for word in [*words, *(target.text for _, target in command.redirects)]:
            _word(word, here, home, out, depth)
        here = _command(words, here, home, out)
    return here


def _word(word: str, here: str, home: str, out: Reach, depth: int) -> None:
    if word.startswith("-") and "=" in word:
        word = word.split("=", 1)[1]    # --output=../x
    if word and not word.startswith("-"):
        out.add(out.paths, _resolve(word, here, home))
    _pieces(word, here, home, out)
    if depth < MAX_DEPTH and any(c in word for c in " \t\n;&|("):
        _script(word, here, home, out, depth + 1)


def _pieces(text: str, here: str, home: str, out: Reach) -> None:
    for piece in _PIECES.findall(text):
        if "/" in piece or piece in ("..", "~") or piece.startswith("~/"):
            out.add(out.paths, _resolve(piece, here, home))


_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done",
                       "while", "until", "time", "exec", "command", "builtin", "sudo",
                       "nohup", "env"})


def _command(words: list[str], here: str, home: str, out: Reach) -> str:
    """Where the next command runs after this one, noting where a git command runs."""
    while words and (words[0] in _KEYWORDS or "=" in words[0] and not words[0].startswith("-")):
        words = words[1:]
    if not words:
        return here
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    if name in ("cd", "pushd"):
        target = next((a for a in args if not a.startswith("-") or a == "-"), "~")
        if target != "-":
            here = _resolve(target, here, home)
            out.add(out.dirs, here)
    elif name == "git" or "git" in args[:1]:   # git ..., or through a wrapper (xargs git)
        out.add(out.git, _git_dir(args[args.index("git") + 1:] if name != "git" else args,
                                  here, home))
    return here


def _git_dir(args: list[str], here: str, home: str) -> str:
    """The directory git runs in (after every -C), or the work tree it is given."""
    at, i = here, 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg == "-C" and i + 1 < len(args):
            at = _resolve(args[i + 1], at, home)
            i += 2
            continue
        if arg.startswith("--work-tree="):
            return _resolve(arg.split("=", 1)[1], at, home)
        if arg == "--work-tree" and i + 1 < len(args):
            return _resolve(args[i + 1], at, home)
        i += 1 + (arg in ("-c", "--git-dir", "--namespace", "--config-env"))
    return at


def _resolve(path: str, here: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return os.path.normpath(os.path.join(here, path))
