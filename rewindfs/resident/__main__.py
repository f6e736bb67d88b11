"""`python -m rewindfs.resident`: a resident process for this Hermes home (it exits at once
when one runs)."""

import sys

from rewindfs.resident.server import main

sys.exit(main())
