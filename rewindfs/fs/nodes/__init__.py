"""The mount's nodes, one module per kind, sharing a context (fs.nodes.context).

    node          what every node is (attributes, children, reading)
    root, remotes, project, checkpoint, tree, file, link   the kinds of directory and file
    listed        directories whose listing is re-read when stale
    changing      directories whose names change (the root, other agents' folders)
    agents, sessions   Kilo Code's and OpenCode's projects, sessions and steps
    context       what every node shares: the store browser, inodes, times
"""
