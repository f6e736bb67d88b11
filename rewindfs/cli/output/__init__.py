"""What the commands print and how: tables, the pager, colour, progress, sizes and ages.
rich is imported only by what prints through it (cli.output.consoles).

    term          the terminal: colour, pager, progress, warnings (rich through consoles)
    consoles      rich's consoles (imported on first rich output)
    widths        how wide output is laid out, without rich
    rowstream     long tables printed a screen at a time (plain text without rich)
    listing       what `rewind list` shows
    logtable      `rewind log`'s rows
    taken         what `rewind checkpoint` says
    leftout       what a checkpoint left out, as `rewind show` and `rewind restore` say it
    bars, feedback   progress of captures and restores; lock waits
    human         sizes and ages for people
"""
