"""Integration with agent harnesses: checkpoint manager and command classification.

    manager    the Hermes-compatible CheckpointManager (never raises from ensure_checkpoint)
    results    its result dictionaries, in Hermes's keys
    checks     its inputs checked, failing in Hermes's words
    workdir    which project a path belongs to
    steps      agent steps and turns: revert, redo
    timeline   the step log replayed (what undo took back of a revert too)
    state      agent state documents and external actions, handed out
    show       everything known about one checkpoint (`rewind show`)
    classify/  whether a shell command may destroy work
"""
