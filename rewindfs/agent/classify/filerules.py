"""Rules for programs that change files: rm, in-place editors, copiers, archivers, downloads.

Also compressors and `patch`, and the sinks (/dev/null ...) where a write clobbers nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from rewindfs.agent.classify.options import (
    Rule,
    in_place,
    option_names,
    scan,
    subcommand,
    when_option,
)

_SINKS = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def is_sink(path: str) -> bool:
    """Writing here cannot clobber a file."""
    return path in _SINKS or re.fullmatch(r"/dev/fd/\d+", path) is not None


ALWAYS: dict[str, str] = {
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


def _dd(args: list[str]) -> str:
    targets = [arg[3:] for arg in args if arg.startswith("of=")]
    return f"dd writes {targets[0]}" if targets and not is_sink(targets[0]) else ""


def _tee(args: list[str]) -> str:
    options, files = scan(args)
    if option_names(options) & {"-a", "--append"}:
        return ""
    files = [f for f in files if f != "-" and not is_sink(f)]
    return f"tee overwrites {files[0]}" if files else ""


def _sponge(args: list[str]) -> str:
    options, files = scan(args)
    if "-a" in option_names(options) or not files:
        return ""
    return f"sponge overwrites {files[0]}"


def _ln(args: list[str]) -> str:
    options, _ = scan(args, short_value="St", long_value=("--suffix", "--target-directory"))
    return "ln -f replaces existing files" if option_names(options) & {"-f", "--force"} else ""


def _find(args: list[str], judge: Rule) -> str:
    for i, arg in enumerate(args):
        if arg == "-delete":
            return "find -delete deletes files"
        if arg in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            if not is_sink(args[i + 1]):
                return f"find {arg} overwrites {args[i + 1]}"
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = args[i + 1 :]
            end = next((k for k, word in enumerate(inner) if word in (";", "+")), len(inner))
            reason = judge(inner[:end])
            if reason:
                return f"find {arg}: {reason}"
    return ""


def _rsync(args: list[str]) -> str:
    options, _ = scan(args, short_value="efBTM")
    names = option_names(options)
    if names & {"-n", "--dry-run", "--list-only"}:
        return ""
    if any(name.startswith("--delete") or name == "--remove-source-files" for name in names):
        return "rsync --delete removes files at the destination"
    return "rsync overwrites files at the destination"


def _tar(args: list[str]) -> str:
    if args and not args[0].startswith("-"):
        args = ["-" + args[0], *args[1:]]  # old-style bundle: tar xzf a.tgz
    options, _ = scan(
        args, short_value="fCbgKLNTVXIH", long_value=("--file", "--directory", "--exclude")
    )
    names = option_names(options)
    if names & {"-O", "--to-stdout"}:
        return ""
    if names & {"-x", "--extract", "--get"}:
        return "tar extracts files over the tree"
    if "--delete" in names:
        return "tar --delete rewrites an archive"
    return ""


def _unzip(args: list[str]) -> str:
    options, operands = scan(args, short_value="dP")
    if not operands or option_names(options) & {"-l", "-t", "-p", "-v", "-Z", "-z"}:
        return ""  # listing, testing, or extracting to stdout
    return "unzip extracts files over the tree"


def _seven_zip(args: list[str]) -> str:
    command, _ = subcommand(args)
    if command in ("x", "e"):
        return f"7z {command} extracts files over the tree"
    if command == "d":
        return "7z d deletes files from an archive"
    return ""


def _unrar(args: list[str]) -> str:
    command, _ = subcommand(args)
    return f"unrar {command} extracts files over the tree" if command in ("x", "e") else ""


_KEEPS_ORIGINAL = {"-c", "--stdout", "--to-stdout", "-k", "--keep", "-l", "--list", "-t",
                   "--test", "-h", "--help", "-V", "--version"}


def _compressor(tool: str) -> Callable[[list[str]], str]:
    """gzip, gunzip, xz ... replace each file argument with its (de)compressed form."""

    def rule(args: list[str]) -> str:
        options, files = scan(args, short_value="SFTCM", long_value=("--suffix",))
        files = [f for f in files if f != "-"]
        if not files or option_names(options) & _KEEPS_ORIGINAL:
            return ""
        return f"{tool} replaces {files[0]}"

    return rule


def _patch(args: list[str]) -> str:
    options, _ = scan(args, short_value="pidDoBrFVYzg")
    return "" if option_names(options) & {"--dry-run", "--check"} else "patch edits files in place"


def _download(
    tool: str, triggers: set[str], short_value: str, long_value: str
) -> Callable[[list[str]], str]:
    """curl -o FILE / wget -O FILE overwrite FILE; ``-`` means stdout."""

    def rule(args: list[str]) -> str:
        options, _ = scan(args, short_value=short_value, long_value=(long_value,))
        for name, value in options:
            if name in triggers and value != "-" and not is_sink(value):
                return f"{tool} {name} overwrites {value or 'a file'}"
        return ""

    return rule


def rules(judge: Rule) -> dict[str, Rule]:
    """This module's rules by program name; `judge` classifies a command one of them
    runs (`find -exec`)."""
    return {
        "sed": in_place("sed", "efl", "i", ("--expression", "--file", "--line-length")),
        "perl": in_place("perl", "eE", "il0xCdDFMmIVW"),
        "ruby": in_place("ruby", "eIrCE", "i0xWTFK"),
        "dd": _dd,
        "tee": _tee,
        "sponge": _sponge,
        "ln": _ln,
        "chmod": when_option("chmod -R changes permissions recursively", {"-R", "--recursive"}),
        "chown": when_option("chown -R changes ownership recursively", {"-R", "--recursive"}),
        "chgrp": when_option("chgrp -R changes ownership recursively", {"-R", "--recursive"}),
        "find": partial(_find, judge=judge),
        "rsync": _rsync,
        "tar": _tar,
        "unzip": _unzip,
        "7z": _seven_zip,
        "7za": _seven_zip,
        "7zr": _seven_zip,
        "7zz": _seven_zip,
        "unrar": _unrar,
        "unar": lambda args: "unar extracts files over the tree" if args else "",
        **{tool: _compressor(tool) for tool in ("gzip", "gunzip", "bzip2", "bunzip2", "xz",
                                                "unxz", "lzma", "unlzma", "uncompress")},
        "patch": _patch,
        "curl": _download("curl", {"-o", "--output", "-O", "--remote-name"},
                          "AbcCdDEeFHKmoPQrTtuUwxXyYz", "--output"),
        "wget": _download("wget", {"-O", "--output-document"}, "OoaPeUt", "--output-document"),
    }
