"""The `rewind` commands, one module per verb family (each lists its click commands in
COMMANDS; cli.group imports a module only when one of its commands runs).

    checkpoints   checkpoint, list, diff
    files         log, cat, grep (one file through history)
    restore       restore, undo
    show          show
    manage        delete, label, forget
    mount         mount, umount
    status        config, status
    maintenance   prune, clear, clear-legacy, adopt
    steps         revert, redo (agent turns and steps)
    agents        `--agent` listings, import, `kilo:3` references
    complete      shell completion (and the completion command)
    check         check
    hooks         hooks install|uninstall|status, hook
    remote        remote, push, fetch
    mcpserve      mcp (the MCP server: rewindfs.mcpserver)
"""
