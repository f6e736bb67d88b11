"""`python -m rewindfs.cli`: the `rewind` command."""

from rewindfs.cli import main

main(prog_name="rewind")
