"""Reading a shell command an AI agent is about to run: whether it is known to change
nothing (readonly, the hooks' gate), where it can reach (reach), and whether it may
destroy work (`classify`: the words of a checkpoint's reason; the gate only with the
`only_destructive` setting).

    readonly     the allowlist of read-only programs and forms (ls, cat, git status ...)
    reach        the directories it runs in, where its git commands run, the paths it names
    commands     the entry point: a command line cut into simple commands, each judged
                 on its argv, redirections and substitutions (the judgement calls are
                 written down there)
    shell_lexer  reading a command line the way a POSIX shell does
    prefixes     programs that run another command (sudo, env, xargs, npx, python -m ...)
    filerules    programs that change files (rm, sed -i, tar x, curl -o ...)
    devrules     git, package managers, in-place formatters
    options      getopt-style option scanning, and rules built on options alone
"""

from rewindfs.agent.classify.commands import PARSE_FAILURE, classify

__all__ = ["PARSE_FAILURE", "classify"]
