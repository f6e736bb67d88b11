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
    gitstate     whether a command can destroy the repository's own state (refs, the
                 index, objects): the checkpoint before it records the repository too
    options      getopt-style option scanning, and rules built on options alone
"""

from rewindfs.faces import face

TYPE_CHECKING = False  # (typing itself: milliseconds of every hook call)
if TYPE_CHECKING:
    from rewindfs.agent.classify.commands import PARSE_FAILURE as PARSE_FAILURE
    from rewindfs.agent.classify.commands import classify as classify

# A face (rewindfs.faces): the hooks' gate reads most commands with the allowlist alone,
# and the classifier's rules are imported only for those it does not clear.
__all__, __getattr__, __dir__ = face(__name__, {
    "PARSE_FAILURE": "rewindfs.agent.classify.commands",
    "classify": "rewindfs.agent.classify.commands",
})
