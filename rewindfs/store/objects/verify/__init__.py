"""The store's files read and verified in Python, to name what is damaged: `rewind check`
and the damage a failed read is blamed on (store.objects.damage).

    check         `rewind check`: every file of the store verified
    lastcheck     when it last ran and what it found (for `rewind doctor`)
    checkgit      git's files and objects
    checkfiles    rewindfs's own files
    problems      what a check reports
    packs         pack files and indexes read and verified
    loose         loose objects read and verified
"""
