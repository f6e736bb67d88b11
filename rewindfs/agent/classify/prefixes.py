"""Programs that run another command (sudo, env, xargs, npx, python -m ...): its argv.

Each prefix gives back the argv of the command it runs (`timeout 10 rm x` -> `rm x`).
"""

from __future__ import annotations

from collections.abc import Callable

from rewindfs.agent.classify.options import after_options, option_names, scan
from rewindfs.agent.classify.shell_lexer import Lexer


def _env_argv(args: list[str]) -> list[str]:
    while args[:1] == ["-"]:  # a lone "-" means -i
        args = args[1:]
    options, operands = scan(
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
    options, operands = scan(args, stop_at_operand=True)
    return [] if option_names(options) & {"-v", "-V"} else operands  # -v only looks the name up


def _timeout_argv(args: list[str]) -> list[str]:
    operands = after_options("sk", ("--signal", "--kill-after"))(args)
    return operands[1:]  # drop the duration


def _ionice_argv(args: list[str]) -> list[str]:
    options, operands = scan(args, short_value="cnpPu", stop_at_operand=True)
    return [] if option_names(options) & {"-p", "-P", "-u"} else operands


def npx_argv(args: list[str]) -> list[str]:
    options, operands = scan(
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


UV_VALUE_OPTIONS = ("--with", "--from", "--python", "--package", "--extra", "--group",
                     "--project", "--directory", "--env-file", "--with-requirements")


PREFIXES: dict[str, Callable[[list[str]], list[str]]] = {
    "sudo": after_options(
        "ugCDhprtTUR",
        ("--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role",
         "--type", "--command-timeout", "--other-user", "--chroot"),
    ),
    "doas": after_options("uC"),
    "env": _env_argv,
    "xargs": after_options(
        "IaLnPsdE",
        ("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
         "--process-slot-var"),
        short_optional="ile",
    ),
    "nice": after_options("n", ("--adjustment",)),
    "nohup": after_options(),
    "timeout": _timeout_argv,
    "time": after_options("fo", ("--format", "--output")),
    "command": _command_argv,
    "builtin": after_options(),
    "exec": after_options("a"),
    "stdbuf": after_options("ioe", ("--input", "--output", "--error")),
    "ionice": _ionice_argv,
    "npx": npx_argv,
    "bunx": npx_argv,
    "pnpx": npx_argv,
    "uvx": after_options("p", UV_VALUE_OPTIONS),
    "python": _python_argv,
}
