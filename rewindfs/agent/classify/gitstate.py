"""Whether a shell command can destroy the project repository's own state (`destroys_git_state`).

A checkpoint holds the working tree, never `.git`; when this names a command, the hook's
checkpoint records the repository too (every ref, HEAD, the index, config, hooks and the
objects they reach: store.projectgit), so `rewind restore N --git` can give it back. A
wrong "yes" costs reading the refs (the objects the store already has are not copied
again); a wrong "no" can lose commits for good. So, as in the classifier, doubt says yes:
a command that cannot be parsed, and any command that names a path inside `.git`
(`rm -rf .git`, `> .git/HEAD`, `python -c "shutil.rmtree('.git')"`).

Named:
* git subcommands that move or delete refs, rewrite the index or drop objects: `reset`,
  `restore`, `clean`, `rebase`, `am`, `pull`, `filter-branch`, `filter-repo`, `update-ref`,
  `symbolic-ref`, `replace`, `update-index`, `read-tree`, `rm`, `gc`, `prune`, `repack`,
  `maintenance`; `checkout` with -f, -B, --orphan, -p, --ours/--theirs, `--` or paths;
  `switch -f/-C/--discard-changes`; `branch -d/-D/-f/-m/-M/-C`; `tag -d/-f`; `stash`
  (all but list, show, create); `commit --amend`; `reflog expire|delete`; `notes`
  (all but list, show); `worktree remove|prune`; `remote remove|rm|prune|rename`;
  `fetch --prune`; `merge`, `cherry-pick`, `revert` with --abort or --quit; `apply
  --cached/--index`;
* a recursive `rm` (or `find -delete`/`-exec`) of a path that holds `.git`: `.`, `..`,
  an absolute path, `~`, or one computed at run time (`$DIR`, a glob starting with `.`).

Not named (judgement calls): `git add` (what it replaces in the index is the working
file's earlier content, which the working tree's checkpoints hold), `git commit`,
`merge`, `cherry-pick` (they add to history; `ORIG_HEAD` and the reflog keep the rest),
`push` (the remote's refs, not the repository's).
"""

from __future__ import annotations

import re

from rewindfs.agent.classify.options import option_names, scan, subcommand
from rewindfs.agent.classify.prefixes import PREFIXES
from rewindfs.agent.classify.shell_lexer import Command, Lexer, ParseError, Token, split_commands

_GIT_GLOBAL_VALUE_OPTIONS = ("--git-dir", "--work-tree", "--namespace", "--config-env",
                             "--super-prefix")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"})
_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done",
                       "while", "until", "esac", "time"})
# A word naming a path inside (or the whole of) .git: `.git`, `.git/x`, `'.git'`; not
# `.gitignore` or `.github`.
_DOT_GIT = re.compile(r"(?<![\w.-])\.git(?![\w.-])")

_ALWAYS = frozenset({
    "reset", "restore", "clean", "rebase", "am", "pull", "filter-branch", "filter-repo",
    "update-ref", "symbolic-ref", "replace", "update-index", "read-tree", "rm", "gc",
    "prune", "repack", "maintenance",
})
_OPTIONS = {  # subcommand -> options that make it destroy repository state
    "checkout": {"-f", "--force", "-B", "--orphan", "-p", "--patch", "--ours", "--theirs",
                 "--pathspec-from-file", "-m", "--merge"},
    "switch": {"-f", "--force", "--discard-changes", "-C", "--force-create", "--orphan"},
    "branch": {"-d", "-D", "--delete", "-f", "--force", "-m", "-M", "--move", "-C"},
    "tag": {"-d", "--delete", "-f", "--force"},
    "commit": {"--amend"},
    "fetch": {"-p", "--prune", "-P", "--prune-tags", "--refmap"},
    "merge": {"--abort", "--quit"},
    "cherry-pick": {"--abort", "--quit"},
    "revert": {"--abort", "--quit"},
    "apply": {"--cached", "--index"},
}
_ACTIONS = {  # subcommand -> its actions that do (None: every one but `_READ_ONLY`'s)
    "stash": None,
    "notes": None,
    "reflog": {"expire", "delete"},
    "worktree": {"remove", "prune"},
    "remote": {"remove", "rm", "prune", "rename"},
}
_READ_ONLY = {"stash": {"list", "show", "create"}, "notes": {"", "list", "show", "get-ref"}}
_VALUE_OPTIONS = {"checkout": ("-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"),
                  "switch": ("-c", "-C", "--create", "--force-create", "--orphan")}


def destroys_git_state(command: str, cut_at: int | None = None) -> str:
    """Why running `command` can destroy the repository's state (refs, HEAD, the index,
    objects), or "" when it cannot. `cut_at`: the caller holds only that many characters
    of longer commands (a hook's helper), so one that long may hide what follows."""
    if cut_at is not None and len(command) >= cut_at:
        return "it was too long to read whole"
    if not command.strip():
        return ""
    if _DOT_GIT.search(command):
        return "it names a path inside .git"
    try:
        return _tokens(Lexer(command).run())
    except (ParseError, RecursionError):
        return "it could not be parsed"


def _tokens(tokens: list[Token]) -> str:
    for command in split_commands(tokens):
        reason = _command(command)
        if reason:
            return reason
    return ""


def _command(command: Command) -> str:
    argv = [word.text for word in command.words]
    while argv and (argv[0] in _KEYWORDS or re.match(r"[A-Za-z_][A-Za-z0-9_]*\+?=", argv[0])):
        argv = argv[1:]
    stdin = next((target.text if op.text == "<<<" else op.heredoc
                  for op, target in command.redirects
                  if op.heredoc is not None or op.text == "<<<"), None)
    reason = _argv(argv, stdin) if argv else ""
    for token in [*command.words, *(t for pair in command.redirects for t in pair)]:
        for sub in token.subs:
            reason = reason or _tokens(sub)
    return reason


def _argv(argv: list[str], stdin: str | None) -> str:
    name, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    if re.fullmatch(r"python[\d.]*", name):
        name = "python"
    if name in PREFIXES:
        inner = PREFIXES[name](args)
        return _argv(inner, stdin) if inner else ""
    if name in _SHELLS:
        return _shell(args, stdin)
    if name == "eval":
        return _tokens(Lexer(" ".join(args)).run())
    if name == "git":
        return _git(args)
    if name in ("rm", "rimraf", "trash", "trash-put"):
        return _rm(name, args)
    if name == "find":
        return _find(args)
    return ""


def _shell(args: list[str], stdin: str | None) -> str:
    """`bash -c STRING` and `bash <<EOF` run shell text: it is judged in turn."""
    runs_string, i = False, 0
    while i < len(args) and args[i][:1] in ("-", "+") and args[i] not in ("-", "--"):
        if args[i] in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 1
        elif args[i][0] == "-" and not args[i].startswith("--") and "c" in args[i]:
            runs_string = True
        i += 1
    operands = args[i + (args[i:i + 1] in (["-"], ["--"])):]
    if runs_string:
        return _tokens(Lexer(operands[0]).run()) if operands else ""
    if not operands and stdin is not None:
        return _tokens(Lexer(stdin).run())
    return ""


def _git(args: list[str]) -> str:
    sub, rest = subcommand(args, short_value="Cc", long_value=_GIT_GLOBAL_VALUE_OPTIONS)
    if sub == "clean" and {"-n", "--dry-run"} & option_names(scan(rest)[0]):
        return ""
    if sub in _ALWAYS:
        return f"git {sub} can move refs, rewrite the index or drop objects"
    options, operands = scan(rest, long_value=_VALUE_OPTIONS.get(sub, ()),
                             short_value="bBcC" if sub in _VALUE_OPTIONS else "")
    names = option_names(options)
    if names & _OPTIONS.get(sub, set()):
        return f"git {sub} {sorted(names & _OPTIONS[sub])[0]} can destroy repository state"
    if sub == "checkout" and (len(operands) > 1 or "--" in rest):
        return "git checkout of paths overwrites the index and the files"
    if sub in _ACTIONS:
        action = operands[0] if operands else ""
        wanted = _ACTIONS[sub]
        if (action in wanted) if wanted is not None else \
                action not in _READ_ONLY.get(sub, set()):
            return f"git {sub} {action or ''}".rstrip() + " can delete repository state"
    return ""


def _rm(name: str, args: list[str]) -> str:
    options, operands = scan(args)
    recursive = name != "rm" or option_names(options) & {"-r", "-R", "--recursive"}
    broad = [p for p in operands if _holds_repository(p)]
    return f"{name} -r {broad[0]} deletes the repository with it" if recursive and broad else ""


def _find(args: list[str]) -> str:
    """`find -delete`, or `-exec` of a command that deletes (`rm {}`), from a start that
    can hold `.git`."""
    starts = []
    for arg in args:
        if arg.startswith(("-", "(", "!")):
            break
        starts.append(arg)
    if not any(_holds_repository(p) for p in starts or ["."]):
        return ""
    if "-delete" in args:
        return "find -delete can delete the repository"
    for at, arg in enumerate(args):
        if arg in ("-exec", "-execdir", "-ok", "-okdir") and at + 1 < len(args):
            run = args[at + 1:]
            run = run[:next((i for i, a in enumerate(run) if a in (";", "+")), len(run))]
            name = run[0].rsplit("/", 1)[-1] if run else ""
            if name in ("rm", "rimraf", "trash", "trash-put", "git", "mv", "shred"):
                return f"find {arg} {name} can delete the repository"
    return ""


def _holds_repository(path: str) -> bool:
    """Whether a path to delete can be (or contain) the project's `.git`: the project or
    a directory above it, a path known only at run time, or a hidden-file glob."""
    if not path or path[0] in "/~$`" or "$" in path:
        return True
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] in (".", "..") and all(p in (".", "..") for p in parts):
        return True
    return ".." in parts or any(p.startswith(".") and any(c in p for c in "*?[")
                                for p in parts)
