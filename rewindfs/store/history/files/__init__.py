"""What a checkpoint holds and how checkpoints differ: files, trees, diffs, searches.

    trees         a checkpoint's files: entries, blobs, changes; unsafe names
    browse        the mount's only door to git: threads, retries, damage named
    diff, diffstat, quoting   differences, git's --stat, git-style quoted names
    changestats   what a checkpoint changed and holds (files, lines, bytes)
    treestats     git's numbers between two trees
    pathlog       one path through the checkpoints (`rewind log`)
    search        `rewind grep`, and the checkpoints that changed a file of a given name
    fileview      one file's change or content, bounded (`rewind ui`'s diff pane)
    modes         real permission bits a restore recorded beside its pre-rollback snapshot
"""
