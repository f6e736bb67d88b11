"""`python -I -m rewindfs.hooks AGENT`: the command the installed hooks run (no click, no
store). Run by the resident process when one is up (resident.client.run_hook: nothing is
imported here but what connecting needs), else here (hooks.entry)."""

import os
import sys

from rewindfs.resident import client

code = client.run_hook(sys.argv[1:])
if code is None:
    from rewindfs.hooks.entry import main

    code = main(sys.argv[1:])
# Ended without the interpreter's teardown (~20 ms of every hook): nothing is left to run
# at exit but the flush of what the answer wrote.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
