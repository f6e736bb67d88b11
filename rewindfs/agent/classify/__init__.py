"""Whether a shell command an AI agent is about to run may destroy work (`classify`).

    commands     the entry point: a command line cut into simple commands, each judged
                 on its argv, redirections and substitutions (the judgement calls are
                 written down there)
    shell_lexer  reading a command line the way a POSIX shell does
    prefixes     programs that run another command (sudo, env, xargs, npx, python -m ...)
    filerules    programs that change files (rm, sed -i, tar x, curl -o ...)
    devrules     git, package managers, in-place formatters
    gitstate     whether a command can destroy the repository's own state (refs, the
                 index, objects): the checkpoint before it records the repository too
    options      getopt-style option scanning, and rules built on options alone
"""

from rewindfs.agent.classify.commands import PARSE_FAILURE, classify

__all__ = ["PARSE_FAILURE", "classify"]
