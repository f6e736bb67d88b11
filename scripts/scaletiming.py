"""One timed `rewind` command, run in this fresh process: the work beyond start-up.

Run by scripts/bench_scale.py as `python scaletiming.py MODE HOME -- ARGS...`. The
process imports the CLI and runs the same command once against an empty home (so
every module it needs is imported), then times `main(ARGS)` against HOME and prints
the seconds. What is timed is therefore the command's own work, without the
interpreter's start-up and imports (issue 21's share of the latency).

MODE says where stdout goes:
  file    /dev/null: the whole output is produced
  head    a pipe whose reader takes the first SCREEN lines and closes it, as
          `rewind list | head -n 60` does: the command stops at its next write
  pager   a pseudo-terminal, with PAGER a command that reads the first SCREEN lines
          and exits, as a person reading one screen of `less` and quitting does
  take    not a command: one checkpoint of the project ARGS[0] in process, after
          appending a line to one of its files (HOME's store; max_snapshots never
          reached, so the whole chain is looked at)
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SCREEN = 60


def _drain(fd: int, lines: int | None, done: threading.Event) -> None:
    seen = 0
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            seen += chunk.count(b"\n")
            if lines is not None and seen >= lines:
                break
    except OSError:
        pass
    finally:
        done.set()
        os.close(fd)


def _run(args: list[str]) -> None:
    from rewindfs.cli.group import rewind

    try:
        rewind.main(args, standalone_mode=False)
    except SystemExit:
        pass


def _timed_take(home: str, workdir: str) -> float:
    from rewindfs import store as st
    from rewindfs.store.objects import Layout, Store

    store = Store(Layout.for_home(home))
    target = sorted(p for p in Path(workdir).rglob("*.py"))[0]
    with open(target, "a") as fh:
        fh.write(f"# edit {time.time_ns()}\n")
    t0 = time.perf_counter()
    st.take(store, workdir, "bench", keep=1_000_000)
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    mode, home = argv[0], argv[1]
    args = argv[argv.index("--") + 1:]
    if mode == "take":
        print(f"{_timed_take(home, args[0]):.6f}")
        return 0
    os.environ["PAGER"] = f"head -n {SCREEN} >/dev/null"
    os.environ["COLUMNS"] = "120"
    real_stdout = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    with tempfile.TemporaryDirectory() as empty:  # imports, nothing of HOME
        _run(["--home", empty, *args])
    done = threading.Event()
    if mode == "head":  # a reader of its own: no fork of ours may hold the pipe's read end
        reader = subprocess.Popen(["head", "-n", str(SCREEN)], stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL)
        assert reader.stdin is not None
        os.dup2(reader.stdin.fileno(), 1)
        reader.stdin.close()
    elif mode == "pager":
        master, slave = pty.openpty()
        os.dup2(slave, 1)
        os.close(slave)
        threading.Thread(target=_drain, args=(master, None, done), daemon=True).start()
    sys.stdout = os.fdopen(os.dup(1), "w")
    t0 = time.perf_counter()
    _run(["--home", home, *args])
    elapsed = time.perf_counter() - t0
    try:
        sys.stdout.close()  # the reader may be gone (head): nothing left to say to it
    except OSError:
        pass
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the interpreter's exit
    os.dup2(null, 1)
    os.write(real_stdout, f"{elapsed:.6f}\n".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
