"""Permissions are never widened by a restore (issue 11).

An overwritten file keeps its permission bits (only the executable bit follows the
checkpoint); a recreated file or directory gets the mode recorded for it, else
0644/0755 less the umask; an undo brings a 0600 file and a 0700 directory back as
they were. Real CLI processes, also under umask 000.
"""

from __future__ import annotations

import os
import stat
import subprocess

import pytest
from conftest import REWIND
from test_restore_helpers import checkpoint, write


@pytest.fixture
def rewind_umask(child_env):
    """rewind_umask(umask, *args, cwd=...): the CLI run with that umask."""

    def run(umask: int, *args: str, cwd) -> subprocess.CompletedProcess:
        return subprocess.run([REWIND, *map(str, args)], cwd=cwd, env=child_env(),
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, preexec_fn=lambda: os.umask(umask))

    return run


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_overwritten_file_keeps_its_bits(mgr, project, rewind_umask):
    write(project, {"secret.txt": "v1\n", "tool.sh": "#!/bin/sh\n", "shared.txt": "s1\n"})
    (project / "tool.sh").chmod(0o700)
    cp = checkpoint(mgr, project, "v1")
    write(project, {"secret.txt": "v2\n", "tool.sh": "#!/bin/sh\necho 2\n",
                    "shared.txt": "s2\n"})
    (project / "secret.txt").chmod(0o600)
    (project / "tool.sh").chmod(0o600)  # lost its x bit since: the checkpoint has it
    (project / "shared.txt").chmod(0o664)
    for umask in (0o000, 0o022):
        proc = rewind_umask(umask, "restore", cp[:8], "--yes", cwd=project)
        assert proc.returncode == 0, proc.stderr
        assert (project / "secret.txt").read_text() == "v1\n"
        assert mode(project / "secret.txt") == 0o600
        assert mode(project / "tool.sh") == 0o700  # x follows the checkpoint, only for u
        assert mode(project / "shared.txt") == 0o664
        write(project, {"secret.txt": "v2\n"})


def test_exec_bit_follows_the_checkpoint_without_widening(mgr, project, run_rewind):
    write(project, {"run.sh": "#!/bin/sh\n", "lib.sh": "x\n"})
    (project / "run.sh").chmod(0o750)
    (project / "lib.sh").chmod(0o640)
    cp = checkpoint(mgr, project, "run executable, lib not")
    (project / "run.sh").chmod(0o640)
    (project / "lib.sh").chmod(0o751)
    proc = run_rewind("restore", cp[:8], "--yes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert mode(project / "run.sh") == 0o750  # x where r is
    assert mode(project / "lib.sh") == 0o640  # every x off, the rest kept


def test_undo_brings_back_a_0600_file_and_a_0700_dir(mgr, project, rewind_umask):
    cp = checkpoint(mgr, project, "before the secrets")
    write(project, {"private/secret.txt": "s\n", "private/deeper/key.txt": "k\n",
                    "notes.txt": "n\n"})
    (project / "private/secret.txt").chmod(0o600)
    (project / "private/deeper/key.txt").chmod(0o400)
    (project / "private/deeper").chmod(0o750)
    (project / "private").chmod(0o700)
    (project / "notes.txt").chmod(0o640)
    for umask in (0o000, 0o022):
        proc = rewind_umask(umask, "restore", cp[:8], "--yes", cwd=project)
        assert proc.returncode == 0, proc.stderr
        assert not (project / "private").exists()
        proc = rewind_umask(umask, "undo", cwd=project)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert mode(project / "private") == 0o700
        assert mode(project / "private/deeper") == 0o750
        assert mode(project / "private/secret.txt") == 0o600
        assert mode(project / "private/deeper/key.txt") == 0o400
        assert mode(project / "notes.txt") == 0o640
        assert (project / "private/deeper/key.txt").read_text() == "k\n"


def test_recreated_without_a_record_follows_the_umask_never_wider(mgr, project,
                                                                    rewind_umask):
    write(project, {"gone/a.txt": "a\n", "gone/run.sh": "#!/bin/sh\n", "top.txt": "t\n"})
    (project / "gone/run.sh").chmod(0o755)
    cp = checkpoint(mgr, project, "ordinary checkpoint: no modes recorded")
    for umask, file_mode, exec_mode, dir_mode in ((0o000, 0o644, 0o755, 0o755),
                                                  (0o077, 0o600, 0o700, 0o700),
                                                  (0o027, 0o640, 0o750, 0o750)):
        for rel in ("gone/a.txt", "gone/run.sh", "top.txt"):
            (project / rel).unlink()
        (project / "gone").rmdir()
        proc = rewind_umask(umask, "restore", cp[:8], "--yes", cwd=project)
        assert proc.returncode == 0, proc.stderr
        assert mode(project / "top.txt") == file_mode, oct(umask)
        assert mode(project / "gone/a.txt") == file_mode, oct(umask)
        assert mode(project / "gone/run.sh") == exec_mode, oct(umask)
        assert mode(project / "gone") == dir_mode, oct(umask)


def test_export_under_umask_000_is_never_world_writable(mgr, project, rewind_umask, tmp_path):
    write(project, {"bin/run.sh": "#!/bin/sh\n"})
    (project / "bin/run.sh").chmod(0o755)
    cp = checkpoint(mgr, project, "export me")
    dest = tmp_path / "exported"
    proc = rewind_umask(0o000, "restore", cp[:8], "--to", str(dest), cwd=project)
    assert proc.returncode == 0, proc.stderr
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in [*dirnames, *filenames]:
            assert not mode(os.path.join(dirpath, name)) & 0o022, os.path.join(dirpath, name)
    assert not mode(dest) & 0o022
    assert mode(dest / "bin/run.sh") == 0o755
    assert mode(dest / "README.md") == 0o644
