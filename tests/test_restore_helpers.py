"""Helpers shared by the restore tests (tests/restore/ and others that restore); no tests here.

They look at the file system and the store independently of the code under test:
a byte-exact picture of a directory, the non-ignored files of a project, a
project ref read with a fresh pygit2 handle.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pygit2
import pytest

from rewindfs.agent.manager import CheckpointManager
from rewindfs.store import project_hash

LINK = 0o120000
REGULAR = 0o100644
EXECUTABLE = 0o100755


CACHES = b"/checkpoints/store/caches"  # what reading writes (store.history.records.records, ...)


def picture(root: Path) -> dict[bytes, tuple]:
    """Every entry below `root` (directories included, links never followed):
    {relative path: ("dir", mode) | ("file", mode, bytes) | ("link", target)}. A store's
    caches are left out: they hold only what can be read again from the objects, and
    commands that only read write them."""
    out: dict[bytes, tuple] = {}
    base = os.fsencode(str(root))
    for dirpath, dirnames, filenames in os.walk(base):
        if dirpath.endswith(CACHES):
            dirnames[:] = []
            continue
        rel_dir = dirpath[len(base) + 1:]
        for name in [*dirnames, *filenames]:
            full = dirpath + b"/" + name
            if full.endswith(CACHES):
                continue
            rel = rel_dir + b"/" + name if rel_dir else name
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                with open(full, "rb") as f:
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), f.read())
    return out


def without_empty_dirs(pic: dict[bytes, tuple]) -> dict[bytes, tuple]:
    """A picture minus its empty directories (which no checkpoint can hold)."""
    parents = {k.rpartition(b"/")[0] for k in pic}
    return {k: v for k, v in pic.items() if v[0] != "dir" or k in parents}


def git_view(root: Path, ignored=lambda rel: False) -> dict[bytes, tuple[int, bytes]]:
    """Files and links below `root` as a checkpoint tree would hold them:
    {path: (git filemode, content or link target)}; `ignored(rel)` drops paths."""
    out = {}
    for rel, item in picture(root).items():
        if ignored(rel):
            continue
        if item[0] == "link":
            out[rel] = (LINK, item[1])
        elif item[0] == "file":
            out[rel] = (EXECUTABLE if item[1] & 0o100 else REGULAR, item[2])
    return out


def ref_tip(store_dir: Path, workdir: Path) -> str | None:
    """The project's ref target, read with a fresh handle (None: no ref)."""
    if not (store_dir / "HEAD").exists():
        return None
    repo = pygit2.Repository(str(store_dir))
    ref = repo.references.get(f"refs/hermes/{project_hash(workdir)}")
    return str(ref.target) if ref is not None else None


def chain(store_dir: Path, workdir: Path) -> list[tuple[str, str]]:
    """(id, subject) of every commit on the project ref, newest first."""
    repo = pygit2.Repository(str(store_dir))
    ref = repo.references.get(f"refs/hermes/{project_hash(workdir)}")
    out = []
    commit = ref.peel(pygit2.Commit) if ref is not None else None
    while commit is not None:
        out.append((str(commit.id), commit.message.split("\n")[0]))
        commit = commit.parents[0] if commit.parent_ids else None
    return out


def one_line_error(proc) -> str:
    """The single `rewind: ...` line a failing command must print (and no traceback)."""
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {proc.stderr!r}"
    assert lines[0].startswith("rewind: "), lines[0]
    return lines[0]


def manager(home: Path, **kwargs) -> CheckpointManager:
    return CheckpointManager(enabled=True, base=home / "checkpoints", **kwargs)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)


def checkpoint(mgr: CheckpointManager, project: Path, reason: str, **kw) -> str:
    result = mgr.take(str(project), reason, **kw)
    assert result.taken, f"checkpoint {reason!r} wrote nothing"
    return result.commit


def skip(reason: str):
    print(f"SKIPPED: {reason}")
    pytest.skip(reason)


def chattr(flag: str, path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.fixture
def immutable(tmp_path):
    """chattr +i on paths (probed first); always cleared in teardown."""
    probe = tmp_path / "chattr-probe"
    probe.write_text("p")
    if not chattr("+i", probe):
        skip("chattr +i is not supported here")
    try:
        probe.write_text("q")
        chattr("-i", probe)
        skip("chattr +i does not stop writes here")
    except PermissionError:
        chattr("-i", probe)
    marked = []

    def mark(path):
        assert chattr("+i", path)
        marked.append(path)

    yield mark
    for path in marked:
        chattr("-i", path)
