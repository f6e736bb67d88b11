"""Reading a program's options the way getopt does, and rules built on options alone.

Bundles (`-xzf`), values, `--`, and the first operand (a subcommand such as `install`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

# A rule reads a program's arguments and says why running it may destroy work ("": it may not).
Rule = Callable[[list[str]], str]


def scan(
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


def option_names(options: list[tuple[str, str]]) -> set[str]:
    return {name for name, _ in options}


def subcommand(
    args: list[str], short_value: str = "", long_value: Iterable[str] = ()
) -> tuple[str, list[str]]:
    """The first operand (a subcommand such as ``install``) and the words after it."""
    _, operands = scan(
        args, short_value=short_value, long_value=long_value, stop_at_operand=True
    )
    return (operands[0], operands[1:]) if operands else ("", [])


def after_options(
    short_value: str = "", long_value: Iterable[str] = (), short_optional: str = ""
) -> Callable[[list[str]], list[str]]:
    def unwrap(args: list[str]) -> list[str]:
        return scan(
            args,
            short_value=short_value,
            short_optional=short_optional,
            long_value=long_value,
            stop_at_operand=True,
        )[1]

    return unwrap


def in_place(
    tool: str, short_value: str, short_optional: str, long_value: Iterable[str] = ()
) -> Callable[[list[str]], str]:
    """Rule for stream editors whose -i / --in-place rewrites their input files."""

    def rule(args: list[str]) -> str:
        options, _ = scan(
            args, short_value=short_value, short_optional=short_optional, long_value=long_value
        )
        if option_names(options) & {"-i", "--in-place"}:
            return f"{tool} -i edits files in place"
        return ""

    return rule


def when_option(
    reason: str, triggers: set[str], short_value: str = "", long_value: Iterable[str] = ()
) -> Callable[[list[str]], str]:
    """Rule for programs that are destructive only with one of ``triggers``."""

    def rule(args: list[str]) -> str:
        options, _ = scan(args, short_value=short_value, long_value=long_value)
        return reason if option_names(options) & triggers else ""

    return rule


def unless_option(reason: str, exemptions: set[str]) -> Callable[[list[str]], str]:
    """Rule for programs that are destructive unless a dry-run/check option is given."""

    def rule(args: list[str]) -> str:
        options, _ = scan(args)
        return "" if option_names(options) & exemptions else reason

    return rule
