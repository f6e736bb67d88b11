"""The resident process: one per user and Hermes home, with everything imported, whose
clients are the agents' hooks, the `rewind` command line and its own children's captures.

    server     the process: a Unix socket, a child forked per hook call or command, the
               watch's answers; never serves stale code, exits when idle
    __main__   `python -m rewindfs.resident` starts one (hooks.isolation starts it so)
    wire       what passes between it and its clients, every field checked
    watch      which paths of each project changed since a capture it trusts (inotify
               through watchdog), and when it cannot be trusted
    source     the watch as the captures' change source (store.capture.changesource):
               in this process, or asked through the parent from a child
    forked     a child made to start as an exec of `rewind` would (also the tests' runner)
    clichild   a `rewind` command run by a child for a client; the pager on its side
    client     `rewind` as a client: descriptors, signals, the pager, the exit status
    loaded     what the process loaded, and whether any of it changed on disk

Nothing here is imported by this package's ``__init__``.
"""
