"""`rewind ui`: a terminal UI over a project's history, on textual (imported only by that
command). A view: everything it reads or does goes through the store, restore and agent
code the commands use.

    run       the command's start: the first screen's rows read, then the app run
    source    what it reads of one project (no textual): rows, files, one file
    actions   what its actions do (no textual): each one's plan, then the act
    app       the textual app: three panes following the selection, workers, keys
    live      new checkpoints, ages and the files pane kept true while it is open
    lifecycle how it ends (q, ctrl+c, SIGTERM, SIGHUP, a bug): the terminal put back,
              no wait for another process's lock
    flows     the actions as the app runs them: plan, y/n, act, read again
    panes     the timeline, files and diff panes
    dialogs   the plan and its y/n, a name to type, every key
    finder    search of file names and text through history
    places    other projects, local and fetched
    text      rows, patches and files as rich Text, escaped
    styles    the layout: side by side from 120 columns, stacked below
"""
