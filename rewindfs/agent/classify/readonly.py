"""Whether a shell command is known to change nothing (`harmless`): the hooks' gate.

No list of destructive commands can be complete: every program can write files
(`python3 -c`, `make clean`, `perl -lpi`, `sqlite3`, `bash -euo pipefail -c` ...). So the
hooks checkpoint before every command unless it is *known* to change nothing: every simple
command in it is a program on this short allowlist, in a form that only reads (``ls``,
``cat``, ``grep``/``rg``, ``git status|log|diff|show``, ``find`` without actions ...), with
no redirection that writes, and every command substitution in it harmless too. Anything
else - an unknown program, a program given by a path or a variable, an option that
writes (``sort -o``, ``find -delete``, ``git diff --output``), an unparsable line - is
not harmless, and is checkpointed. A checkpoint with nothing changed writes nothing.

The command is read with the classifier's lexer (shell_lexer); the classifier itself
(commands) only names the culprit in a checkpoint's reason, and gates the hooks only for
people who ask for it (the `only_destructive` setting).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rewindfs.agent.classify.filerules import is_sink
from rewindfs.agent.classify.options import scan
from rewindfs.agent.classify.shell_lexer import Command, Lexer, ParseError, Token, split_commands

# Reserved words that only introduce or close a compound command. (`time` is not one: in
# a shell other than bash it is /usr/bin/time, which runs and may write, `-o FILE`.)
_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done",
                       "while", "until", "esac"})
# A simple command starting with these is a loop or case header: its words are data.
_HEADERS = frozenset({"for", "select", "case"})
# Variables an assignment may set before (or between) read-only commands: they change how
# output looks, never which program runs or what it writes (PATH, PAGER, GIT_* do).
_SAFE_VARIABLES = re.compile(r"(LC_[A-Z_]+|LANG|LANGUAGE|TZ|COLUMNS|LINES|TERM|NO_COLOR"
                             r"|CLICOLOR(_FORCE)?|GREP_COLORS?)")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?\+?=")
# Where a program named by an absolute path may live to count as the allowlisted one.
_SYSTEM_BINS = ("/bin/", "/usr/bin/", "/usr/local/bin/")

# Programs that only read, whatever their arguments (redirections are judged apart).
_ANY_ARGS = frozenset({
    "ls", "cat", "head", "tail", "wc", "pwd", "true", "false", ":", "echo", "printf",
    "basename", "dirname", "realpath", "readlink", "stat", "du", "df", "which", "whoami",
    "id", "uname", "nl", "cut", "tr", "cmp", "diff", "comm", "join", "paste", "fold", "rev",
    "tac", "column", "seq", "sleep", "test", "[", "[[", "grep", "egrep", "fgrep", "od",
    "hexdump", "strings", "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum",
    "printenv", "read", "cd", "pushd", "popd", "dirs", "set", "unset", "wait", "exit",
    "return", "shift", "type", "jq", "nproc", "ps", "free", "uptime", "locale",
})


def harmless(command: str) -> bool:
    """True only when `command` is known to change no file: every part of it is on the
    allowlist in a read-only form. False for anything unknown or unparsable."""
    if not command.strip():
        return True   # nothing runs
    try:
        return _tokens_harmless(Lexer(command).run())
    except (ParseError, RecursionError):
        return False


def _tokens_harmless(tokens: list[Token]) -> bool:
    return all(_command_harmless(c) for c in split_commands(tokens))


def _command_harmless(command: Command) -> bool:
    words = command.words
    while words and words[0].text in _KEYWORDS and not words[0].quoted:
        words = words[1:]
    if not all(_word_harmless(w) for w in words):
        return False
    is_test = bool(words) and words[0].text == "[[" and not words[0].quoted
    for op, target in command.redirects:
        if not (_subs_harmless(op) and _word_harmless(target)):
            return False
        if not is_test and not _redirect_harmless(op, target):
            return False
    if not words:
        return True
    if words[0].text in _HEADERS and not words[0].quoted:
        return True
    argv = [w.text for w in words]
    while argv and _ASSIGNMENT.match(argv[0]):
        if not _SAFE_VARIABLES.fullmatch(_ASSIGNMENT.match(argv[0]).group(1)):
            return False
        argv = argv[1:]
    if not argv:
        return True   # assignments alone
    name = _program(words[len(words) - len(argv)])
    if name is None:
        return False
    if name in _ANY_ARGS:
        return True
    rule = _RULES.get(name)
    return rule is not None and rule(argv[1:])


def _word_harmless(word: Token) -> bool:
    """No command runs from this word, except harmless command substitutions."""
    text = word.text
    # ${x:-$(cmd)} and $(( a[$(cmd)] )) run commands the lexer does not record.
    if "$((" in text or ("${" in text and ("$(" in text or "`" in text)):
        return False
    return _subs_harmless(word)


def _subs_harmless(token: Token) -> bool:
    return all(_tokens_harmless(sub) for sub in token.subs)


def _redirect_harmless(op: Token, target: Token) -> bool:
    if op.text in ("<", "<<", "<<-", "<<<"):
        return True
    if op.text in (">&", "<&") and re.fullmatch(r"\d*-?", target.text):
        return True   # 2>&1, >&2, <&0, >&- duplicate or close descriptors
    if op.text in (">", ">|", "&>", ">&", ">>", "&>>"):
        return is_sink(target.text)
    return False   # <> opens the file for writing too


def _program(word: Token) -> str | None:
    """The allowlist's name for the program `word` runs; None when it cannot be known
    from the text (a variable, a glob, a relative path: whatever it is, it is not ours)."""
    text = word.text
    if not text or any(c in text for c in "$`*?[]~") and text not in ("[", "[["):
        return None
    if "/" in text:
        if not text.startswith(_SYSTEM_BINS):
            return None
        text = text.rsplit("/", 1)[1]
    return text


# -- programs that only read in some forms -----------------------------------------------

def _short_letters(args: list[str]) -> set[str]:
    """Every letter of every single-dash option bundle (`-xvf` -> x, v, f)."""
    return {c for a in args if a.startswith("-") and not a.startswith("--") for c in a[1:]}


def _without(letters: str = "", longs: tuple[str, ...] = ()) -> Callable[[list[str]], bool]:
    """Read-only unless an option in `letters` (in any bundle) or a long option starting
    with one of `longs` is given."""
    def rule(args: list[str]) -> bool:
        if set(letters) & _short_letters(args):
            return False
        return not any(a.startswith(longs) for a in args if a.startswith("--")) if longs \
            else True
    return rule


_FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint",
                           "-fprint0", "-fprintf", "-fls"})


def _find(args: list[str]) -> bool:
    return not _FIND_ACTIONS & set(args)


def _uniq(args: list[str]) -> bool:
    """`uniq IN OUT` writes OUT."""
    _, operands = scan(args, short_value="fsw",
                             long_value=("--skip-fields", "--skip-chars", "--check-chars"))
    return len(operands) <= 1


def _env(args: list[str]) -> bool:
    """`env` alone prints the environment; with a command (or -S) it runs it."""
    return all(a.startswith("-") for a in args) and _without("SC", ("--split-string",))(args)


def _command(args: list[str]) -> bool:
    """`command -v NAME` only looks NAME up."""
    return bool(args) and args[0] in ("-v", "-V")


def _export(args: list[str]) -> bool:
    for arg in args:
        if arg.startswith("-"):
            if arg != "-p":
                return False
            continue
        match = _ASSIGNMENT.match(arg)
        name = match.group(1) if match else arg
        if not _SAFE_VARIABLES.fullmatch(name):
            return False
    return True


# -- git: the forms that only read ------------------------------------------------------

# Global options that change nothing (`-C DIR` moves where git runs: the hooks' scope sees
# it). `-c`, `--config-env`, `--exec-path`, `-p` are not among them: a config value or a
# pager can run any program.
_GIT_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "--no-replace-objects", "--literal-pathspecs",
                               "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
                               "--no-optional-locks", "--bare"})
_GIT_GLOBAL_VALUES = ("-C", "--git-dir", "--work-tree", "--namespace")
_GIT_READS = frozenset({"status", "log", "diff", "show", "blame", "shortlog", "describe",
                        "rev-parse", "rev-list", "ls-files", "ls-tree", "cat-file", "grep",
                        "show-ref", "merge-base", "name-rev", "whatchanged", "diff-tree",
                        "diff-files", "diff-index", "count-objects", "version", "var",
                        "check-ignore", "check-attr", "annotate", "cherry", "range-diff"})
_GIT_BRANCH_WRITES = ("-d", "-D", "-m", "-M", "-c", "-C", "-f", "-u", "--delete", "--move",
                      "--copy", "--force", "--set-upstream", "--unset-upstream",
                      "--edit-description", "--track", "--no-track", "--create-reflog")
_GIT_TAG_WRITES = ("-d", "-a", "-s", "-u", "-f", "-m", "-F", "-e", "--delete", "--annotate",
                   "--sign", "--local-user", "--force", "--message", "--file", "--edit")
_GIT_CONFIG_READS = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
                     "--get-color", "--get-colorbool")


def _git(args: list[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg in _GIT_GLOBAL_VALUES:
            i += 2
            continue
        if not (arg in _GIT_GLOBAL_FLAGS or arg.startswith(tuple(
                f"{o}=" for o in _GIT_GLOBAL_VALUES if o.startswith("--")))):
            return False
        i += 1
    if i >= len(args):
        return True   # `git` alone prints its help
    sub, rest = args[i], args[i + 1:]
    if any(a.startswith("--output") for a in rest):
        return False   # git diff/log/show --output=FILE
    if sub in _GIT_READS:
        # `git grep -O` opens the files in a pager (any program); --ext-diff and textconv
        # run what the repository's config says, as the plain command does.
        return not (sub == "grep" and ("O" in _short_letters(rest) or any(
            a.startswith("--open-files-in-pager") for a in rest)))
    if sub == "branch":
        return _only_options(rest, _GIT_BRANCH_WRITES)
    if sub == "tag":
        return _only_options(rest, _GIT_TAG_WRITES, listing=("-l", "--list"))
    if sub == "stash":
        return rest[:1] in (["list"], ["show"])
    if sub == "remote":
        return not rest or rest[0] in ("-v", "--verbose", "get-url", "show")
    if sub == "config":
        return rest[:1] in (["get"], ["list"]) or any(a in _GIT_CONFIG_READS for a in rest)
    if sub == "reflog":
        return not rest or rest[0] == "show" or rest[0].startswith("-")
    if sub == "worktree":
        return rest[:1] == ["list"]
    return False


def _only_options(args: list[str], writes: tuple[str, ...], listing: tuple[str, ...] = ()
                  ) -> bool:
    """`git branch`/`git tag` list when given only options, none of which writes (or, for a
    tag, with -l: patterns as operands)."""
    if any(a == w or a.startswith(w + "=") or (len(w) == 2 and a[:1] == "-" and a[1:2] != "-"
                                                and w[1] in a[1:])
           for a in args for w in writes):
        return False
    return all(a.startswith("-") for a in args) or bool(listing and set(listing) & set(args))


_RULES: dict[str, Callable[[list[str]], bool]] = {
    "find": _find,
    "sort": _without("o", ("--output", "--compress-program")),
    "uniq": _uniq,
    "tree": _without("oR", ("--output",)),   # -R writes 00Tree.html in every folder
    "date": _without("s", ("--set",)),
    "file": _without("C", ("--compile",)),
    "rg": _without("", ("--pre", "--hostname-bin")),   # each runs a program
    "env": _env,
    "command": _command,
    "export": _export,
    "git": _git,
}
