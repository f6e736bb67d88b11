"""What agents record beside checkpoints, never in their trees: notes, steps, writes.

    notes, meta   JSON notes per checkpoint: agent state documents, external actions
    carrying      a checkpoint taken with agent state and pending actions attached
    actions       external actions no checkpoint carries yet
    ledger        agent writes (record_agent_write), for safe restores
    steplog       agent steps (begin, end, after, revert, unrevert), JSON lines
"""
