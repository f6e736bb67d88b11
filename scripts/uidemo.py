"""A small project with an agent's history, the same bytes and ids every time: what the
`rewind ui` screen snapshots (tests/ui) and the screenshots of docs/ui.md
(scripts/gen_ui_screenshots) are taken of.

The history is written with `git fast-import` at fixed times (git itself is the right
tool for writing a made-up history: rewindfs only takes checkpoints of the present),
with the trailers an agent hook leaves; the working tree is then left as the agent left
it: notes.md deleted, app.py changed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

T0 = 1_767_000_000  # the first checkpoint's time (2025-12-29)
NOW = T0 + 3600  # the clock the screens are drawn at
FILES = {
    "README.md": b"# shop\n\nA small shop.\n",
    "app.py": b'def greet(name):\n    return "hello " + name\n\n\nprint(greet("world"))\n',
    "notes.md": b"# notes\n\n- ship on friday\n- ask about the logo\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)),
}
EDITED_APP = b'def greet(name):\n    return "hi " + name\n\n\nprint(greet("world"))\n'
AGENT = {"Rewind-Agent": "claude-code", "Rewind-Session": "5f1c9a0e-demo"}


def steps() -> list[tuple[str, dict[str, str], dict[str, bytes | None]]]:
    """(reason, trailers, files changed (None: deleted)) of each checkpoint, oldest first."""
    return [
        ("first", {}, dict(FILES)),
        ("before: sed -i s/hello/hi/ app.py",
         {**AGENT, "Rewind-Turn": "1", "Rewind-Step": "claude-code:t1", "Rewind-Phase": "before"},
         {}),
        ("before: rm notes.md",
         {**AGENT, "Rewind-Turn": "2", "Rewind-Step": "claude-code:t2", "Rewind-Phase": "before"},
         {"app.py": EDITED_APP}),
    ]


def build(home: Path, workdir: Path) -> None:
    """The project at `workdir` (made here) with its history in the store of `home`."""
    from rewindfs.store import Layout, Store, project_hash

    workdir.mkdir(parents=True)
    layout = Layout.for_home(home)
    store = Store(layout)
    store.ensure()
    store.project(workdir)  # its registry record and admin dir, as a first checkpoint makes
    ref = Layout.project_ref(project_hash(workdir))
    parts: list[bytes] = []
    tree: dict[str, bytes] = {}
    for n, (reason, trailers, changes) in enumerate(steps()):
        when = f"rewindfs <rewindfs@local> {T0 + 600 * n} +0000"
        text = reason + "\n\n" + "".join(f"{k}: {v}\n" for k, v in trailers.items()) \
            + f"Rewind-Time: {T0 + 600 * n}.000000\n"
        msg = text.encode()
        parts += [f"commit {ref}\nauthor {when}\ncommitter {when}\ndata {len(msg)}\n".encode(),
                  msg, b"\n"]
        for rel, data in changes.items():
            if data is None:
                parts.append(f"D {rel}\n".encode())
                tree.pop(rel, None)
            else:
                parts += [f"M 100644 inline {rel}\ndata {len(data)}\n".encode(), data, b"\n"]
                tree[rel] = data
        parts.append(b"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=str(layout.store), GIT_CONFIG_GLOBAL="/dev/null",
               GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "fast-import", "--quiet", "--force"], input=b"".join(parts),
                   env=env, check=True)
    for rel, data in tree.items():
        (workdir / rel).write_bytes(data)
    # What the agent did after the last checkpoint: notes.md deleted, app.py edited again.
    (workdir / "notes.md").unlink()
    (workdir / "app.py").write_bytes(EDITED_APP + b"print(greet('shop'))\n")
