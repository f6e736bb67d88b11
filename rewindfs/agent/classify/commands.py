"""Decide whether a shell command an AI agent is about to run may destroy work.

The harness calls :func:`classify` before each shell command and snapshots the working
directory first when the answer is "destructive". The two mistakes are not equal: a wrong
"safe" can lose work for good, a wrong "destructive" costs one cheap snapshot. So whenever the
text is ambiguous (unparsable quoting, a redirect to ``$OUT``), the answer is "destructive".

Approach. A small hand-written lexer reads the command the way a POSIX shell would: quotes,
backslash escapes, comments, line continuations, control operators, redirections with their
file descriptors, heredocs (whose bodies are skipped), and ``$(...)``, backticks and ``<(...)``
nested to any depth. The token stream is cut into simple commands at every control operator
and parenthesis. Each simple command is judged on:

1. its argv, after peeling off prefixes that run another command (``sudo``, ``env``,
   ``xargs``, ``timeout 10``, ``python -m`` ...). ``bash -c STRING``, ``eval`` and ``npx -c``
   classify their string recursively; per-program rules: filerules and devrules;
2. its redirections (``>``, ``>|``, ``&>``, ``N>`` to anything but a sink like /dev/null);
3. the commands inside its command substitutions, which run before it does.

Judgement calls (each one resolves doubt towards a snapshot unless noted):

* Package installs are destructive even with ``pip install --user`` or ``npm -g``: the
  classifier cannot see where the environment lives (an in-tree venv, ``PIP_TARGET``, an npm
  prefix), and lockfiles are rewritten either way.
* ``tar c`` / ``7z a`` (creating an archive) and ``make`` are not destructive: they write new
  files, and make targets are opaque. Likewise scripts (``python x.py``, ``bash x.sh``) and
  ``python -c`` code are not analysed. Extraction (``tar x``, ``unzip``, ``gunzip``) is.
* ``rsync`` is destructive even without ``--delete``: like ``cp`` it overwrites at the
  destination. ``--dry-run`` / ``-n`` makes it safe.
* Dry runs and read-only forms are safe: ``git clean -n``, ``git apply --check``,
  ``git stash list|show``, ``patch --dry-run``, ``unzip -l``, ``gunzip -c``, ``tar xO``.
* In-place formatters (``black``, ``ruff format``, ``prettier --write``, ``gofmt -w``,
  ``cargo fmt``...) and downloads onto a named file (``curl -o``, ``wget -O``) are destructive:
  they rewrite files as surely as ``sed -i``.
* A heredoc body is data, not commands, except that ``$(...)`` in an unquoted-delimiter body
  does run, and a body fed to a shell (``bash <<EOF``) is a script; both are classified.
* ``[[ a > b ]]`` and ``$(( a > b ))`` compare; they are not redirects.
* Not seen: commands piped into a shell (``... | sh``), ``${x:-$(cmd)}``, a program name
  computed at run time (``$(which rm) x``), functions and aliases defined elsewhere, and
  anything run on another host (``ssh``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rewindfs.agent.classify import devrules, filerules
from rewindfs.agent.classify.filerules import ALWAYS, is_sink
from rewindfs.agent.classify.gitstate import destroys_git_state
from rewindfs.agent.classify.options import Rule
from rewindfs.agent.classify.prefixes import PREFIXES
from rewindfs.agent.classify.shell_lexer import Command, Lexer, ParseError, Token, split_commands

PARSE_FAILURE = "could not parse command"


def classify(command: str) -> tuple[bool, str]:
    """Return ``(destructive, reason)`` for one shell command line (or script).

    ``reason`` names the culprit, e.g. ``"rm deletes files"`` or
    ``"overwriting redirect > src/app.py"``; it is ``""`` when the command is not destructive.
    """
    if not command.strip():
        return False, ""
    try:
        reason = _script_reason(command)
    except (ParseError, RecursionError):
        return True, PARSE_FAILURE
    # What can destroy the repository's own state (refs, index, objects) is decided in
    # one place (gitstate): a checkpoint before it records the repository too.
    reason = reason or destroys_git_state(command)
    return bool(reason), reason


def _script_reason(text: str) -> str:
    return _tokens_reason(Lexer(text).run())


def _tokens_reason(tokens: list[Token]) -> str:
    return _first(_command_reason(command) for command in split_commands(tokens))


def _first(reasons: Iterable[str]) -> str:
    return next((reason for reason in reasons if reason), "")


# Reserved words that only introduce or close a compound command; the program follows them.
_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done",
                       "while", "until", "esac"})
# The rest of a simple command starting with these is a loop/case/function header, not a program.
_HEADERS = frozenset({"for", "select", "case", "function"})


def _command_reason(command: Command) -> str:
    argv = [word.text for word in command.words]
    while argv and argv[0] in _KEYWORDS:
        argv = argv[1:]
    is_test = argv[:1] == ["[["]  # inside [[ ]], > and < compare strings
    reason = ""
    if argv and argv[0] not in _HEADERS and not is_test:
        reason = _argv_reason(argv, _stdin_script(command))
    if not reason and not is_test:
        reason = _first(_redirect_reason(op, target) for op, target in command.redirects)
    return reason or _substitutions_reason(command)


def _stdin_script(command: Command) -> str | None:
    """Text a heredoc or here-string feeds the command, in case the command is a shell."""
    for op, target in command.redirects:
        if op.heredoc is not None:
            return op.heredoc
        if op.text == "<<<":
            return target.text
    return None


def _substitutions_reason(command: Command) -> str:
    tokens = [*command.words, *(t for pair in command.redirects for t in pair)]
    return _first(_tokens_reason(sub) for token in tokens for sub in token.subs)


def _redirect_reason(op: Token, target: Token) -> str:
    if op.text == ">&" and re.fullmatch(r"\d*-?", target.text):
        return ""  # 2>&1, >&2, >&- duplicate or close descriptors
    # `>&word` with a non-number word is bash shorthand for `&>word`.
    if op.text not in (">", ">|", "&>", ">&") or is_sink(target.text):
        return ""
    return f"overwriting redirect {op.fd}{op.text} {target.text}"


# --------------------------------------------------------------------------- argv rules


def _argv_reason(argv: list[str], stdin: str | None = None) -> str:
    while argv and re.match(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", argv[0]):
        argv = argv[1:]  # leading VAR=value assignments
    if not argv:
        return ""
    name, args = _program(argv[0]), argv[1:]
    if name in PREFIXES:
        return _argv_reason(PREFIXES[name](args), stdin)
    if name in _SHELLS:
        return _shell_reason(args, stdin)
    if name in ALWAYS:
        return ALWAYS[name]
    rule = _RULES.get(name)
    return rule(args) if rule else ""


def _program(word: str) -> str:
    """``/usr/bin/python3.12`` -> ``python``: the key the rules are filed under."""
    name = word.rsplit("/", 1)[-1]
    for family in ("python", "pip"):
        if re.fullmatch(family + r"[\d.]*", name):
            return family
    if name.startswith("mkfs"):
        return "mkfs"
    return name


# ---- shells and other programs that run a string as shell code

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"})


def _shell_reason(args: list[str], stdin: str | None) -> str:
    """``bash -c STRING`` runs STRING; ``bash <<EOF`` runs the heredoc; ``bash x.sh`` is opaque."""
    runs_string = False
    i = 0
    while i < len(args) and args[i][:1] in ("-", "+") and args[i] not in ("-", "--"):
        arg = args[i]
        i += 1
        if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 1  # these take a value
        elif arg[0] == "-" and not arg.startswith("--") and "c" in arg:
            runs_string = True
    if args[i : i + 1] in (["-"], ["--"]):
        i += 1
    operands = args[i:]
    if runs_string:
        return _script_reason(operands[0]) if operands else ""
    if not operands and stdin is not None:
        return _script_reason(stdin)
    return ""


def _eval(args: list[str]) -> str:
    return _script_reason(" ".join(args))


def _trap(args: list[str]) -> str:
    # `trap 'rm -rf "$tmp"' EXIT` runs its string when the shell exits.
    if len(args) >= 2 and not args[0].startswith("-"):
        return _script_reason(args[0])
    return ""


_RULES: dict[str, Rule] = {
    "eval": _eval,
    "trap": _trap,
    **filerules.rules(_argv_reason),
    **devrules.rules(_argv_reason),
}
