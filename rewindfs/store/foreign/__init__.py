"""Other agents' snapshot repositories (Kilo Code, OpenCode), read-only, and copying
their trees into the shared store so their gc cannot lose them.

    objects     the object database of a project's snapshots (never written)
    places      snapshot git dirs, and which agent project a directory is
"""
