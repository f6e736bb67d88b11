"""The hooks' gate: whether a shell command gets a checkpoint before it runs (`due`).

Fail safe, not clever: a checkpoint before every command unless the command is known to
change nothing (agent.classify.readonly's allowlist: `ls`, `cat`, `grep`, `git status`,
`find` without actions ...). No list of destructive commands is complete - every program
can write files - and a checkpoint with nothing changed writes nothing, so a checkpoint
too many costs little and one missing can cost everything. The classifier
(agent.classify) is the gate only for people who ask for it: the `only_destructive`
setting (config.yaml `checkpoints: only_destructive: true`, or
REWIND_ONLY_DESTRUCTIVE=1), off by default.

Reading the setting costs a YAML parse; it is needed only for a command the allowlist
does not clear, and parsed only when the config file or the environment mentions it.
A setting that cannot be read counts as off (the safe side), and is logged.
"""

from __future__ import annotations

from rewindfs.hooks import hooklog

SETTING = "only_destructive"


def due(command: str) -> bool:
    """Whether `command` gets a checkpoint first (the caller bounds the time it takes)."""
    from rewindfs.agent.classify.readonly import harmless

    if harmless(command):
        return False
    if not only_destructive():
        return True
    from rewindfs.agent.classify import classify

    return classify(command)[0]


def only_destructive() -> bool:
    import os

    env = "REWIND_" + SETTING.upper()
    if env not in os.environ:
        try:
            with open(hooklog.hermes_home() / "config.yaml", "rb") as fh:
                if SETTING.encode() not in fh.read(1 << 20):
                    return False
        except OSError:
            return False
    try:
        from rewindfs import config

        return bool(config.load(hooklog.hermes_home()).values[SETTING])
    except Exception as exc:  # noqa: BLE001 - a bad setting must not cost a checkpoint
        hooklog.write("-", hooklog.ERROR, f"{SETTING} not read ({exc}): every command "
                      "not known to be harmless is checkpointed")
        return False
