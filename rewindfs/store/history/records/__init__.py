"""The history records: each commit remembered once (caches/<h16>.history), read from the
file's end, with chain summaries, so listing and numbering a long history read one file.

    records       the records of a project: read, checked against the objects, saved
    recordfile    the file's format (sealed lines, summaries), written and parsed
    recordtail    the file read from its end, only as far as what is asked for
    listpage      a long history read from its tip only as far as it is shown
"""
