"""`rewind mcp`: a Model Context Protocol server over stdio, so an agent can look back at
its project's checkpoints and, when the user allows it, take its own mistakes back.

Opt-in twice: nothing starts it unless `rewind hooks install AGENT --mcp` registers it in
the agent's configuration, and it is read-only unless started with `--allow-restore`.
Everything is read and restored through the code the CLI uses (store, restore, sources);
only `server` and `wire` import the `mcp` SDK, and only `rewind mcp` imports them.

    server     the SDK's MCPServer over stdio: the six tools, their descriptions, errors
    wire       every line answered (a JSON-RPC error for one the SDK cannot read), every
               answer sent (one that cannot be written as JSON: an error for its request)
    tools      what each tool does (plain Python over the store and restore code)
    session    which project a call names; one call at a time; a restore's guards
    describe   checkpoints, plans and restores as text for a model
    steps      `kilo:N` / `opencode:N` references (other agents' steps)
    sizing     output sized for a model: capped lists, cuts on any long line, every line
               from the store bounded, binary described
"""
