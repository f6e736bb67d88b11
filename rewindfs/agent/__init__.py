"""Integration with agent harnesses: checkpoint manager and command classification.

    manager    the Hermes-compatible CheckpointManager (never raises from ensure_checkpoint)
    results    its result dictionaries, in Hermes's keys
    checks     its inputs checked, failing in Hermes's words
    workdir    which project a path belongs to
    steps      agent steps and turns: revert, redo
    stepbegin  the begin and after events of a step (also written by the hooks), trailers
    timeline   the step log replayed: steps, their sessions, the marks they ran between
               (what undo took back of a revert too)
    attribution  which session changed what: what a session's revert takes back, keeps
    state      agent state documents and external actions, handed out
    show       everything known about one checkpoint (`rewind show`)
    classify/  whether a shell command may destroy work
"""
