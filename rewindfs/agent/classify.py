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
   classify their string recursively; per-program rules live in ``_RULES``;
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
from collections.abc import Callable, Iterable

from rewindfs.agent.shell_lexer import Command, Lexer, ParseError, Token, split_commands

__all__ = ["classify"]

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


_SINKS = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def _is_sink(path: str) -> bool:
    """Writing here cannot clobber a file."""
    return path in _SINKS or re.fullmatch(r"/dev/fd/\d+", path) is not None


def _redirect_reason(op: Token, target: Token) -> str:
    if op.text == ">&" and re.fullmatch(r"\d*-?", target.text):
        return ""  # 2>&1, >&2, >&- duplicate or close descriptors
    # `>&word` with a non-number word is bash shorthand for `&>word`.
    if op.text not in (">", ">|", "&>", ">&") or _is_sink(target.text):
        return ""
    return f"overwriting redirect {op.fd}{op.text} {target.text}"


# --------------------------------------------------------------------------- option scanning


def _scan(
    args: list[str],
    *,
    short_value: str = "",
    short_optional: str = "",
    long_value: Iterable[str] = (),
    stop_at_operand: bool = False,
) -> tuple[list[tuple[str, str]], list[str]]:
    """Split ``args`` into options and operands roughly the way getopt does.

    Options come back as ``(name, value)``, one per letter of a bundle like ``-xzf``.
    ``short_value`` letters take a value (the rest of the bundle, else the next word);
    ``short_optional`` letters take only an attached one (``sed -i.bak``). GNU tools accept
    options after operands, so scanning carries on past them unless ``stop_at_operand``
    (a prefix like ``sudo`` must stop at the command it runs).
    """
    long_value = frozenset(long_value)
    options: list[tuple[str, str]] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--"):
            name, equals, value = arg.partition("=")
            if not equals and name in long_value and i < len(args):
                value = args[i]
                i += 1
            options.append((name, value))
        elif arg.startswith("-") and len(arg) > 1:
            i = _scan_bundle(arg, args, i, options, short_value, short_optional)
        elif stop_at_operand:
            operands.extend(args[i - 1 :])
            break
        else:
            operands.append(arg)
    return options, operands


def _scan_bundle(
    arg: str,
    args: list[str],
    i: int,
    options: list[tuple[str, str]],
    short_value: str,
    short_optional: str,
) -> int:
    for j in range(1, len(arg)):
        letter, rest = arg[j], arg[j + 1 :]
        if letter in short_value:
            if not rest and i < len(args):
                rest = args[i]
                i += 1
            options.append(("-" + letter, rest))
            return i
        if letter in short_optional:
            options.append(("-" + letter, rest))
            return i
        options.append(("-" + letter, ""))
    return i


def _names(options: list[tuple[str, str]]) -> set[str]:
    return {name for name, _ in options}


def _subcommand(
    args: list[str], short_value: str = "", long_value: Iterable[str] = ()
) -> tuple[str, list[str]]:
    """The first operand (a subcommand such as ``install``) and the words after it."""
    _, operands = _scan(
        args, short_value=short_value, long_value=long_value, stop_at_operand=True
    )
    return (operands[0], operands[1:]) if operands else ("", [])


# --------------------------------------------------------------------------- argv rules


def _argv_reason(argv: list[str], stdin: str | None = None) -> str:
    while argv and re.match(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", argv[0]):
        argv = argv[1:]  # leading VAR=value assignments
    if not argv:
        return ""
    name, args = _program(argv[0]), argv[1:]
    if name in _PREFIXES:
        return _argv_reason(_PREFIXES[name](args), stdin)
    if name in _SHELLS:
        return _shell_reason(args, stdin)
    if name in _ALWAYS:
        return _ALWAYS[name]
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


# ---- prefixes: programs that run another command; each returns that command's argv


def _after_options(
    short_value: str = "", long_value: Iterable[str] = (), short_optional: str = ""
) -> Callable[[list[str]], list[str]]:
    def unwrap(args: list[str]) -> list[str]:
        return _scan(
            args,
            short_value=short_value,
            short_optional=short_optional,
            long_value=long_value,
            stop_at_operand=True,
        )[1]

    return unwrap


def _env_argv(args: list[str]) -> list[str]:
    while args[:1] == ["-"]:  # a lone "-" means -i
        args = args[1:]
    options, operands = _scan(
        args,
        short_value="uCSP",
        long_value=("--unset", "--chdir", "--split-string"),
        stop_at_operand=True,
    )
    split = [value for name, value in options if name in ("-S", "--split-string")]
    if split:
        return [t.text for t in Lexer(split[0]).run() if t.kind == "word"] + operands
    return operands


def _command_argv(args: list[str]) -> list[str]:
    options, operands = _scan(args, stop_at_operand=True)
    return [] if _names(options) & {"-v", "-V"} else operands  # -v only looks the name up


def _timeout_argv(args: list[str]) -> list[str]:
    operands = _after_options("sk", ("--signal", "--kill-after"))(args)
    return operands[1:]  # drop the duration


def _ionice_argv(args: list[str]) -> list[str]:
    options, operands = _scan(args, short_value="cnpPu", stop_at_operand=True)
    return [] if _names(options) & {"-p", "-P", "-u"} else operands


def _npx_argv(args: list[str]) -> list[str]:
    options, operands = _scan(
        args, short_value="pc", long_value=("--package", "--call"), stop_at_operand=True
    )
    calls = [value for name, value in options if name in ("-c", "--call")]
    return ["sh", "-c", calls[0]] if calls else operands


def _python_argv(args: list[str]) -> list[str]:
    """``python -m pip install x`` -> ``pip install x``; scripts and ``-c`` code -> []."""
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            return []
        if arg.startswith("--"):
            continue
        for j, letter in enumerate(arg[1:], start=1):
            attached = arg[j + 1 :]
            if letter == "m":
                return [attached, *args[i:]] if attached else args[i:]
            if letter == "c":
                return []
            if letter in "WX":
                if not attached:
                    i += 1  # the value is the next word
                break
    return []


_UV_VALUE_OPTIONS = ("--with", "--from", "--python", "--package", "--extra", "--group",
                     "--project", "--directory", "--env-file", "--with-requirements")

_PREFIXES: dict[str, Callable[[list[str]], list[str]]] = {
    "sudo": _after_options(
        "ugCDhprtTUR",
        ("--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role",
         "--type", "--command-timeout", "--other-user", "--chroot"),
    ),
    "doas": _after_options("uC"),
    "env": _env_argv,
    "xargs": _after_options(
        "IaLnPsdE",
        ("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
         "--process-slot-var"),
        short_optional="ile",
    ),
    "nice": _after_options("n", ("--adjustment",)),
    "nohup": _after_options(),
    "timeout": _timeout_argv,
    "time": _after_options("fo", ("--format", "--output")),
    "command": _command_argv,
    "builtin": _after_options(),
    "exec": _after_options("a"),
    "stdbuf": _after_options("ioe", ("--input", "--output", "--error")),
    "ionice": _ionice_argv,
    "npx": _npx_argv,
    "bunx": _npx_argv,
    "pnpx": _npx_argv,
    "uvx": _after_options("p", _UV_VALUE_OPTIONS),
    "python": _python_argv,
}

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


# ---- programs that always change or remove files

_ALWAYS: dict[str, str] = {
    "rm": "rm deletes files",
    "rmdir": "rmdir deletes directories",
    "unlink": "unlink deletes a file",
    "shred": "shred destroys file contents",
    "mv": "mv moves or overwrites files",
    "cp": "cp can overwrite files",
    "install": "install copies over files",
    "truncate": "truncate resizes files, discarding data",
    "mkfs": "mkfs formats a filesystem",
    "mkswap": "mkswap formats a device",
    "wipefs": "wipefs erases filesystem signatures",
    "rimraf": "rimraf deletes files",
    "trash": "trash removes files from the tree",
    "trash-put": "trash-put removes files from the tree",
}

# ---- editors, copiers and archivers with a destructive mode


def _in_place(
    tool: str, short_value: str, short_optional: str, long_value: Iterable[str] = ()
) -> Callable[[list[str]], str]:
    """Rule for stream editors whose -i / --in-place rewrites their input files."""

    def rule(args: list[str]) -> str:
        options, _ = _scan(
            args, short_value=short_value, short_optional=short_optional, long_value=long_value
        )
        if _names(options) & {"-i", "--in-place"}:
            return f"{tool} -i edits files in place"
        return ""

    return rule


def _when_option(
    reason: str, triggers: set[str], short_value: str = "", long_value: Iterable[str] = ()
) -> Callable[[list[str]], str]:
    """Rule for programs that are destructive only with one of ``triggers``."""

    def rule(args: list[str]) -> str:
        options, _ = _scan(args, short_value=short_value, long_value=long_value)
        return reason if _names(options) & triggers else ""

    return rule


def _unless_option(reason: str, exemptions: set[str]) -> Callable[[list[str]], str]:
    """Rule for programs that are destructive unless a dry-run/check option is given."""

    def rule(args: list[str]) -> str:
        options, _ = _scan(args)
        return "" if _names(options) & exemptions else reason

    return rule


def _dd(args: list[str]) -> str:
    targets = [arg[3:] for arg in args if arg.startswith("of=")]
    return f"dd writes {targets[0]}" if targets and not _is_sink(targets[0]) else ""


def _tee(args: list[str]) -> str:
    options, files = _scan(args)
    if _names(options) & {"-a", "--append"}:
        return ""
    files = [f for f in files if f != "-" and not _is_sink(f)]
    return f"tee overwrites {files[0]}" if files else ""


def _sponge(args: list[str]) -> str:
    options, files = _scan(args)
    if "-a" in _names(options) or not files:
        return ""
    return f"sponge overwrites {files[0]}"


def _ln(args: list[str]) -> str:
    options, _ = _scan(args, short_value="St", long_value=("--suffix", "--target-directory"))
    return "ln -f replaces existing files" if _names(options) & {"-f", "--force"} else ""


def _find(args: list[str]) -> str:
    for i, arg in enumerate(args):
        if arg == "-delete":
            return "find -delete deletes files"
        if arg in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            if not _is_sink(args[i + 1]):
                return f"find {arg} overwrites {args[i + 1]}"
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = args[i + 1 :]
            end = next((k for k, word in enumerate(inner) if word in (";", "+")), len(inner))
            reason = _argv_reason(inner[:end])
            if reason:
                return f"find {arg}: {reason}"
    return ""


def _rsync(args: list[str]) -> str:
    options, _ = _scan(args, short_value="efBTM")
    names = _names(options)
    if names & {"-n", "--dry-run", "--list-only"}:
        return ""
    if any(name.startswith("--delete") or name == "--remove-source-files" for name in names):
        return "rsync --delete removes files at the destination"
    return "rsync overwrites files at the destination"


def _tar(args: list[str]) -> str:
    if args and not args[0].startswith("-"):
        args = ["-" + args[0], *args[1:]]  # old-style bundle: tar xzf a.tgz
    options, _ = _scan(
        args, short_value="fCbgKLNTVXIH", long_value=("--file", "--directory", "--exclude")
    )
    names = _names(options)
    if names & {"-O", "--to-stdout"}:
        return ""
    if names & {"-x", "--extract", "--get"}:
        return "tar extracts files over the tree"
    if "--delete" in names:
        return "tar --delete rewrites an archive"
    return ""


def _unzip(args: list[str]) -> str:
    options, operands = _scan(args, short_value="dP")
    if not operands or _names(options) & {"-l", "-t", "-p", "-v", "-Z", "-z"}:
        return ""  # listing, testing, or extracting to stdout
    return "unzip extracts files over the tree"


def _seven_zip(args: list[str]) -> str:
    command, _ = _subcommand(args)
    if command in ("x", "e"):
        return f"7z {command} extracts files over the tree"
    if command == "d":
        return "7z d deletes files from an archive"
    return ""


def _unrar(args: list[str]) -> str:
    command, _ = _subcommand(args)
    return f"unrar {command} extracts files over the tree" if command in ("x", "e") else ""


_KEEPS_ORIGINAL = {"-c", "--stdout", "--to-stdout", "-k", "--keep", "-l", "--list", "-t",
                   "--test", "-h", "--help", "-V", "--version"}


def _compressor(tool: str) -> Callable[[list[str]], str]:
    """gzip, gunzip, xz ... replace each file argument with its (de)compressed form."""

    def rule(args: list[str]) -> str:
        options, files = _scan(args, short_value="SFTCM", long_value=("--suffix",))
        files = [f for f in files if f != "-"]
        if not files or _names(options) & _KEEPS_ORIGINAL:
            return ""
        return f"{tool} replaces {files[0]}"

    return rule


def _patch(args: list[str]) -> str:
    options, _ = _scan(args, short_value="pidDoBrFVYzg")
    return "" if _names(options) & {"--dry-run", "--check"} else "patch edits files in place"


def _download(
    tool: str, triggers: set[str], short_value: str, long_value: str
) -> Callable[[list[str]], str]:
    """curl -o FILE / wget -O FILE overwrite FILE; ``-`` means stdout."""

    def rule(args: list[str]) -> str:
        options, _ = _scan(args, short_value=short_value, long_value=(long_value,))
        for name, value in options:
            if name in triggers and value != "-" and not _is_sink(value):
                return f"{tool} {name} overwrites {value or 'a file'}"
        return ""

    return rule


# ---- git


_GIT_GLOBAL_VALUE_OPTIONS = ("--git-dir", "--work-tree", "--namespace", "--config-env",
                             "--super-prefix")
_GIT_REWRITES = frozenset({
    "reset", "clean", "checkout", "restore", "switch", "stash", "rm", "mv", "apply", "am",
    "pull", "merge", "rebase", "cherry-pick", "revert", "filter-branch", "filter-repo",
    "checkout-index", "read-tree",
})
_GIT_NESTED = {"worktree": {"remove"}, "submodule": {"update", "deinit"}}
_GIT_BRANCH_DESTROYS = {"-d", "-D", "--delete", "-M", "-C", "-f", "--force"}
_GIT_APPLY_REPORTS = {"--check", "--stat", "--numstat", "--summary"}


def _git(args: list[str]) -> str:
    sub, rest = _subcommand(args, short_value="Cc", long_value=_GIT_GLOBAL_VALUE_OPTIONS)
    options, operands = _scan(rest)
    names = _names(options)
    action = operands[0] if operands else ""
    if sub == "branch":
        return "git branch can delete or overwrite branches" if names & _GIT_BRANCH_DESTROYS else ""
    if sub == "stash" and action in ("list", "show", "create"):
        return ""
    if sub == "clean" and names & {"-n", "--dry-run"}:
        return ""
    if sub == "apply" and names & _GIT_APPLY_REPORTS and "--apply" not in names:
        return ""
    if action in _GIT_NESTED.get(sub, ()):
        return f"git {sub} {action} removes or rewrites files"
    if sub in _GIT_REWRITES:
        return f"git {sub} can overwrite or discard work"
    return ""


# ---- package managers and formatters


def _dependencies(
    tool: str,
    writes: Iterable[str],
    runners: Iterable[str] = (),
    bare_installs: bool = False,
    long_value: Iterable[str] = (),
) -> Callable[[list[str]], str]:
    """Rule for a package manager: ``writes`` subcommands rewrite dependencies, ``runners``
    (``uv run``, ``bundle exec``) run another command, which is classified in turn."""
    writes, runners = frozenset(writes), frozenset(runners)

    def rule(args: list[str]) -> str:
        sub, rest = _subcommand(
            [a for a in args if not a.startswith("+")],  # cargo +nightly
            short_value="C",
            long_value=long_value,
        )
        if sub in runners:
            return _argv_reason(_after_options("p", _UV_VALUE_OPTIONS)(rest))
        if sub in writes or (bare_installs and not sub):
            options, _ = _scan(rest)
            if "--dry-run" in _names(options):
                return ""
            return f"{tool} {sub or 'install'} changes the project's dependencies"
        return ""

    return rule


_NPM_WRITES = {"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isntall", "add",
               "ci", "clean-install", "install-test", "it", "install-ci-test", "cit", "uninstall",
               "un", "remove", "rm", "r", "unlink", "update", "up", "upgrade", "udpate", "prune",
               "dedupe", "ddp", "link", "ln"}
_PNPM_WRITES = {"install", "i", "add", "remove", "rm", "un", "uninstall", "update", "up",
                "upgrade", "prune", "link", "ln", "unlink", "dedupe", "import", "install-test",
                "it"}
_YARN_WRITES = {"install", "add", "remove", "upgrade", "up", "upgrade-interactive", "dedupe",
                "link", "unlink", "import"}


def _npm(args: list[str]) -> str:
    sub, rest = _subcommand(args, short_value="w", long_value=("--prefix", "--workspace"))
    if sub == "audit" and "fix" in rest:
        return "npm audit fix changes the project's dependencies"
    if sub in ("exec", "x"):
        return _argv_reason(_npx_argv(rest))
    return _dependencies("npm", _NPM_WRITES)(args)


def _uv(args: list[str]) -> str:
    sub, rest = _subcommand(args, long_value=_UV_VALUE_OPTIONS)
    if sub == "pip":
        return _dependencies("uv pip", {"install", "uninstall", "sync"})(rest)
    if sub == "tool" and rest[:1] == ["run"]:
        return _argv_reason(_after_options("p", _UV_VALUE_OPTIONS)(rest[1:]))
    return _dependencies(
        "uv", {"add", "remove", "sync", "lock", "venv"}, {"run"}, long_value=_UV_VALUE_OPTIONS
    )(args)


def _go(args: list[str]) -> str:
    sub, rest = _subcommand(args)
    if sub in ("get", "fmt", "fix"):
        return f"go {sub} rewrites project files"
    if sub == "mod" and rest[:1] and rest[0] in ("tidy", "vendor", "edit"):
        if {"-print", "-json"} & set(rest):
            return ""
        return f"go mod {rest[0]} rewrites go.mod or vendor/"
    return ""


def _cargo(args: list[str]) -> str:
    sub, rest = _subcommand([a for a in args if not a.startswith("+")])
    if sub == "fmt" and "--check" not in rest:
        return "cargo fmt rewrites source files"
    if sub == "clippy" and "--fix" in rest:
        return "cargo clippy --fix rewrites source files"
    if sub in ("fix", "clean"):
        return f"cargo {sub} rewrites or deletes files"
    return _dependencies("cargo", {"add", "remove", "rm", "update"})(args)


def _ruff(args: list[str]) -> str:
    sub, rest = _subcommand(args)
    if sub == "format" and not {"--check", "--diff"} & set(rest):
        return "ruff format rewrites source files"
    if {"--fix", "--fix-only"} & set(args):
        return "ruff --fix rewrites source files"
    return ""


def _yarn(args: list[str]) -> str:
    sub, rest = _subcommand(args, long_value=("--cwd",))
    if sub in ("dlx", "exec"):
        return _argv_reason(_npx_argv(rest))
    if sub == "global" and rest[:1] in (["add"], ["remove"], ["upgrade"]):
        return f"yarn global {rest[0]} changes installed packages"
    return _dependencies("yarn", _YARN_WRITES, bare_installs=True, long_value=("--cwd",))(args)


def _pnpm(args: list[str]) -> str:
    sub, rest = _subcommand(args, short_value="CF", long_value=("--dir", "--filter"))
    if sub in ("dlx", "exec"):
        return _argv_reason(_npx_argv(rest))
    return _dependencies("pnpm", _PNPM_WRITES, long_value=("--dir", "--filter"))(args)


def _bun(args: list[str]) -> str:
    sub, rest = _subcommand(args)
    if sub == "x":
        return _argv_reason(_npx_argv(rest))
    writes = {"install", "i", "add", "a", "remove", "rm", "update", "upgrade", "link"}
    return _dependencies("bun", writes)(args)


_RULES: dict[str, Callable[[list[str]], str]] = {
    "eval": _eval,
    "trap": _trap,
    "sed": _in_place("sed", "efl", "i", ("--expression", "--file", "--line-length")),
    "perl": _in_place("perl", "eE", "il0xCdDFMmIVW"),
    "ruby": _in_place("ruby", "eIrCE", "i0xWTFK"),
    "dd": _dd,
    "tee": _tee,
    "sponge": _sponge,
    "ln": _ln,
    "chmod": _when_option("chmod -R changes permissions recursively", {"-R", "--recursive"}),
    "chown": _when_option("chown -R changes ownership recursively", {"-R", "--recursive"}),
    "chgrp": _when_option("chgrp -R changes ownership recursively", {"-R", "--recursive"}),
    "find": _find,
    "rsync": _rsync,
    "tar": _tar,
    "unzip": _unzip,
    "7z": _seven_zip,
    "7za": _seven_zip,
    "7zr": _seven_zip,
    "7zz": _seven_zip,
    "unrar": _unrar,
    "unar": lambda args: "unar extracts files over the tree" if args else "",
    **{tool: _compressor(tool) for tool in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz",
                                            "lzma", "unlzma", "uncompress")},
    "patch": _patch,
    "curl": _download(
        "curl", {"-o", "--output", "-O", "--remote-name"}, "AbcCdDEeFHKmoPQrTtuUwxXyYz", "--output"
    ),
    "wget": _download("wget", {"-O", "--output-document"}, "OoaPeUt", "--output-document"),
    "git": _git,
    "npm": _npm,
    "yarn": _yarn,
    "pnpm": _pnpm,
    "bun": _bun,
    "pip": _dependencies("pip", {"install", "uninstall"}),
    "uv": _uv,
    "poetry": _dependencies(
        "poetry", {"add", "remove", "install", "update", "lock", "sync"}, {"run"}
    ),
    "pipenv": _dependencies(
        "pipenv", {"install", "uninstall", "update", "sync", "lock", "clean"}, {"run"}
    ),
    "cargo": _cargo,
    "go": _go,
    "bundle": _dependencies("bundle", {"install", "update", "add", "remove", "lock"}, {"exec"}),
    "composer": _dependencies("composer", {"install", "require", "update", "remove"}),
    "black": _unless_option("black rewrites source files", {"--check", "--diff", "--version"}),
    "isort": _unless_option(
        "isort rewrites source files", {"--check", "--check-only", "-c", "--diff", "--version"}
    ),
    "rustfmt": _unless_option("rustfmt rewrites source files", {"--check"}),
    "ruff": _ruff,
    "prettier": _when_option("prettier --write rewrites files", {"--write", "-w"}),
    "eslint": _when_option("eslint --fix rewrites files", {"--fix"}),
    "gofmt": _when_option("gofmt -w rewrites files", {"-w"}),
    "clang-format": _when_option("clang-format -i rewrites files", {"-i"}),
    "autopep8": _when_option("autopep8 -i rewrites files", {"-i", "--in-place"}),
}
