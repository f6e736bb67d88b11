"""Rules for developer tools: git, package managers and in-place formatters.

A dependency change is destructive; `uv run`, `npm exec` and the like run another
command, which the judge they are given classifies in turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from rewindfs.agent.classify.options import (
    Rule,
    after_options,
    option_names,
    scan,
    subcommand,
    unless_option,
    when_option,
)
from rewindfs.agent.classify.prefixes import UV_VALUE_OPTIONS, npx_argv

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
    sub, rest = subcommand(args, short_value="Cc", long_value=_GIT_GLOBAL_VALUE_OPTIONS)
    options, operands = scan(rest)
    names = option_names(options)
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


def _dependencies(
    tool: str,
    writes: Iterable[str],
    runners: Iterable[str] = (),
    bare_installs: bool = False,
    long_value: Iterable[str] = (),
    judge: Rule | None = None,
) -> Rule:
    """Rule for a package manager: ``writes`` subcommands rewrite dependencies, ``runners``
    (``uv run``, ``bundle exec``) run another command, which ``judge`` classifies."""
    writes, runners = frozenset(writes), frozenset(runners)

    def rule(args: list[str]) -> str:
        sub, rest = subcommand(
            [a for a in args if not a.startswith("+")],  # cargo +nightly
            short_value="C",
            long_value=long_value,
        )
        if sub in runners and judge is not None:
            return judge(after_options("p", UV_VALUE_OPTIONS)(rest))
        if sub in writes or (bare_installs and not sub):
            options, _ = scan(rest)
            if "--dry-run" in option_names(options):
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


def _npm(args: list[str], judge: Rule) -> str:
    sub, rest = subcommand(args, short_value="w", long_value=("--prefix", "--workspace"))
    if sub == "audit" and "fix" in rest:
        return "npm audit fix changes the project's dependencies"
    if sub in ("exec", "x"):
        return judge(npx_argv(rest))
    return _dependencies("npm", _NPM_WRITES)(args)


def _uv(args: list[str], judge: Rule) -> str:
    sub, rest = subcommand(args, long_value=UV_VALUE_OPTIONS)
    if sub == "pip":
        return _dependencies("uv pip", {"install", "uninstall", "sync"})(rest)
    if sub == "tool" and rest[:1] == ["run"]:
        return judge(after_options("p", UV_VALUE_OPTIONS)(rest[1:]))
    return _dependencies(
        "uv", {"add", "remove", "sync", "lock", "venv"}, {"run"}, long_value=UV_VALUE_OPTIONS,
        judge=judge,
    )(args)


def _go(args: list[str]) -> str:
    sub, rest = subcommand(args)
    if sub in ("get", "fmt", "fix"):
        return f"go {sub} rewrites project files"
    if sub == "mod" and rest[:1] and rest[0] in ("tidy", "vendor", "edit"):
        if {"-print", "-json"} & set(rest):
            return ""
        return f"go mod {rest[0]} rewrites go.mod or vendor/"
    return ""


def _cargo(args: list[str]) -> str:
    sub, rest = subcommand([a for a in args if not a.startswith("+")])
    if sub == "fmt" and "--check" not in rest:
        return "cargo fmt rewrites source files"
    if sub == "clippy" and "--fix" in rest:
        return "cargo clippy --fix rewrites source files"
    if sub in ("fix", "clean"):
        return f"cargo {sub} rewrites or deletes files"
    return _dependencies("cargo", {"add", "remove", "rm", "update"})(args)


def _ruff(args: list[str]) -> str:
    sub, rest = subcommand(args)
    if sub == "format" and not {"--check", "--diff"} & set(rest):
        return "ruff format rewrites source files"
    if {"--fix", "--fix-only"} & set(args):
        return "ruff --fix rewrites source files"
    return ""


def _yarn(args: list[str], judge: Rule) -> str:
    sub, rest = subcommand(args, long_value=("--cwd",))
    if sub in ("dlx", "exec"):
        return judge(npx_argv(rest))
    if sub == "global" and rest[:1] in (["add"], ["remove"], ["upgrade"]):
        return f"yarn global {rest[0]} changes installed packages"
    return _dependencies("yarn", _YARN_WRITES, bare_installs=True, long_value=("--cwd",))(args)


def _pnpm(args: list[str], judge: Rule) -> str:
    sub, rest = subcommand(args, short_value="CF", long_value=("--dir", "--filter"))
    if sub in ("dlx", "exec"):
        return judge(npx_argv(rest))
    return _dependencies("pnpm", _PNPM_WRITES, long_value=("--dir", "--filter"))(args)


def _bun(args: list[str], judge: Rule) -> str:
    sub, rest = subcommand(args)
    if sub == "x":
        return judge(npx_argv(rest))
    writes = {"install", "i", "add", "a", "remove", "rm", "update", "upgrade", "link"}
    return _dependencies("bun", writes)(args)


def rules(judge: Rule) -> dict[str, Rule]:
    """This module's rules by program name; `judge` classifies a command one of them runs
    (`uv run`, `npm exec`, `bundle exec` ...)."""
    return {
        "git": _git,
        "npm": partial(_npm, judge=judge),
        "yarn": partial(_yarn, judge=judge),
        "pnpm": partial(_pnpm, judge=judge),
        "bun": partial(_bun, judge=judge),
        "pip": _dependencies("pip", {"install", "uninstall"}),
        "uv": partial(_uv, judge=judge),
        "poetry": _dependencies(
            "poetry", {"add", "remove", "install", "update", "lock", "sync"}, {"run"}, judge=judge
        ),
        "pipenv": _dependencies(
            "pipenv", {"install", "uninstall", "update", "sync", "lock", "clean"}, {"run"},
            judge=judge,
        ),
        "cargo": _cargo,
        "go": _go,
        "bundle": _dependencies("bundle", {"install", "update", "add", "remove", "lock"},
                                {"exec"}, judge=judge),
        "composer": _dependencies("composer", {"install", "require", "update", "remove"}),
        "black": unless_option("black rewrites source files",
                               {"--check", "--diff", "--version"}),
        "isort": unless_option(
            "isort rewrites source files", {"--check", "--check-only", "-c", "--diff", "--version"}
        ),
        "rustfmt": unless_option("rustfmt rewrites source files", {"--check"}),
        "ruff": _ruff,
        "prettier": when_option("prettier --write rewrites files", {"--write", "-w"}),
        "eslint": when_option("eslint --fix rewrites files", {"--fix"}),
        "gofmt": when_option("gofmt -w rewrites files", {"-w"}),
        "clang-format": when_option("clang-format -i rewrites files", {"-i"}),
        "autopep8": when_option("autopep8 -i rewrites files", {"-i", "--in-place"}),
    }
