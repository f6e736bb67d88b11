"""Read-only readers of other agents' snapshots (Kilo Code, OpenCode).

    agents      which agents, where each keeps its data
    records     the records they keep (projects, sessions, messages, parts)
    database    reading them from SQLite, read-only, under a live writer
    jsonstore   reading them from older versions' JSON storage
    model       sessions -> turns -> steps
    history     one agent's listed steps of one project
    refs        `kilo:3`, `opencode:<session>/2.1`: references to steps

The git side (opening their snapshot repositories, copying trees into the shared
store) is store.foreign's: only `store` talks to git.
"""
