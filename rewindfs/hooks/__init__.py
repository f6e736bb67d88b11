"""Agent hooks: Claude Code, Codex, Gemini CLI, Cursor, OpenCode and Kilo call rewindfs before
their tools run (`rewind hook AGENT`, JSON payload on stdin), and `rewind hooks install`
writes the agents' configuration.

    entry       the hook: payload in, gate, checkpoints when due, exit 0 (never blocks)
    gate        a checkpoint before every command not known to change nothing
    protect     the checkpoints: the call's project and every other one the command reaches
    scope       the projects a command reaches (git's work tree, paths named, `cd`s)
    notice      what is left unprotected, said in the agent's own answer
    __main__    `python -I -m rewindfs.hooks AGENT`, what installed hooks run
    isolation   the hooks run isolated from the project (interpreter flags, environment)
    deadline    bounds in time for the hook's own work (a timer signal)
    payloads    each agent's payload read into one shape
    unchanged   nothing changed since the newest checkpoint: the stamp (the ref by libgit2)
    checkpoint  the checkpoint: a step of the agent's turn, through the store's faces
    helper      the hook's side of the resident process (rewindfs.resident): ask, the
                go-ahead, abandon at the deadline; a session's first checkpoint
    state       per-session memory (Gemini's turn, once-per-turn writes, project roots)
    hooklog     the hooks' log and their private folder
    agents, install, plugin, configfile   `rewind hooks install|uninstall|status`
    configrecord  what install found in a file (byte-exact uninstall); JSON kept in style
    mcpconfig, mcpinstall   `--mcp`: the MCP server (`rewind mcp`) in each agent's config
    codextrust  whether Codex will run the installed hook (its trust, as Codex judges it)

The hook is a security boundary: docs/security.md says what it trusts and what not.

The hook runs once per tool call, so its start-up is the product's latency: ``entry`` imports
only the payload parsers and the allowlist, and the store only when a checkpoint is due.
Nothing here is imported by this package's ``__init__``.
"""
