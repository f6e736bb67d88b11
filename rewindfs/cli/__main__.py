from rewindfs.cli import main

main(prog_name="rewind")
