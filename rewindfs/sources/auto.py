"""Automatic import (`auto_import: [kilo, opencode]` in config.yaml): every `rewind` command
keeps the agents' snapshots of the project around the current directory, in the
background.

The command itself only compares the agents' data signatures (a few stats) with what
the last import of the project saw; when something changed it starts a detached child
(its own session: it outlives the command and never holds it up) and goes on. The
child takes the project's import lock without waiting (one import at a time; a
second child just leaves), imports what is new, and records the signatures it
started from, so a change made meanwhile is imported next time. Trouble is logged
to `store/imports.log`, never shown to the command.

    python -m rewindfs.sources.auto --home HOME --dir PROJECT kilo [opencode]
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from pathlib import Path

from rewindfs.errors import Busy, NotFound, RewindError
from rewindfs.sources.agents import AGENTS
from rewindfs.sources.history import load
from rewindfs.sources.keep import import_history
from rewindfs.store import Layout, Store, project_hash
from rewindfs.store.objects import locks

log = logging.getLogger(__name__)
BUSY_SECONDS = 0.5  # the child does not wait long for a busy database: next command


def marker(layout: Layout, workdir: Path) -> Path:
    return layout.store / "imports" / f"{project_hash(workdir)}.json"


def _seen(layout: Layout, workdir: Path) -> dict:
    try:
        found = json.loads(marker(layout, workdir).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _signatures(agents: tuple[str, ...]) -> dict[str, list]:
    return {name: [list(item) for item in AGENTS[name].signature(AGENTS[name].data_dir())]
            for name in agents}


def start(home: Path, layout: Layout, workdir: Path, agents: tuple[str, ...]) -> None:
    """Import in a detached child when an agent's data changed since the last import of
    `workdir`. Never raises, never waits."""
    try:
        now = _signatures(agents)
        seen = _seen(layout, workdir)
        if all(not now[a] or seen.get(a) == now[a] for a in agents):
            return
        subprocess.Popen(
            [sys.executable, "-m", __name__, "--home", str(home), "--dir", str(workdir),
             *agents], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, cwd="/", close_fds=True)
    except Exception:  # noqa: BLE001 - an import must never disturb the command
        log.debug("automatic import not started", exc_info=True)


def run(home: Path, workdir: Path, agents: tuple[str, ...]) -> dict[str, int]:
    """Import what is new for `workdir`; {agent: checkpoints created}."""
    layout = Layout.for_home(home)
    store = Store(layout)
    store.ensure()
    created: dict[str, int] = {}
    with locks.file_lock(layout.lock_file(f"import-{project_hash(workdir)}"), timeout=0):
        now = _signatures(agents)
        for name in agents:
            try:
                history = load(AGENTS[name], workdir, busy_seconds=BUSY_SECONDS)
            except NotFound:
                continue
            created[name] = len(import_history(store, history).created)
        path = marker(layout, workdir)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        locks.write_atomic(path, json.dumps({**_seen(layout, workdir), **now}))
    return created


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rewindfs.sources.auto")
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("agents", nargs="+", choices=sorted(AGENTS))
    args = parser.parse_args(argv)
    layout = Layout.for_home(args.home)
    _log_to(layout.store / "imports.log")
    try:
        created = run(args.home, args.dir, tuple(args.agents))
    except Busy:
        return 0  # another import of this project is running
    except (RewindError, OSError) as exc:
        log.warning("automatic import of %s failed: %s", args.dir, exc)
        return 1
    if any(created.values()):
        log.info("imported into %s: %s", args.dir, created)
    return 0


def _log_to(path: Path) -> None:
    if not path.parent.is_dir():
        return
    try:
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)


if __name__ == "__main__":
    sys.exit(main())
