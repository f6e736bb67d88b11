"""`python -m rewindfs.hooks AGENT`: the command the installed hooks run (no click, no store)."""

import sys

from rewindfs.hooks.entry import main

sys.exit(main(sys.argv[1:]))
