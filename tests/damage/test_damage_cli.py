"""One line, the documented exit code, never a traceback (issue 10, "Also"; issue 15's
`rewind check`): broken pipes, a damaged config.yaml, `rewind check` and `--repair`."""

from __future__ import annotations

import os
import subprocess
import time

from conftest import REWIND


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rewind: "), proc.stderr
    return lines[0]


# -- a reader that goes away ------------------------------------------------------------


def _pipeline(env: dict[str, str], reader: str, *args: str) -> subprocess.CompletedProcess:
    """`rewind ARGS | READER` in bash; prints rewind's own exit status."""
    script = f'"$0" "$@" | {reader}; echo "rewind exited ${{PIPESTATUS[0]}}"'
    return subprocess.run(["bash", "-c", script, REWIND, *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_list_into_a_closed_pipe_ends_quietly_like_git(child_env, project, run_rewind):
    for i in range(3):
        (project / f"f{i}.txt").write_text(f"{i}\n")
        run_rewind("checkpoint", project, "-m", f"c{i}", check=True)
    # `true` never reads: every write rewind makes meets a closed pipe.
    for reader in ("true", "head -1"):
        proc = _pipeline(child_env(), reader, "list", "--all-projects")
        assert proc.stderr == "", proc.stderr  # no "rewind: Broken pipe", no traceback
        status = int(proc.stdout.strip().splitlines()[-1].split()[-1])
        assert status in (0, 141)  # 141: git's status in the same pipeline (128 + SIGPIPE)
        if reader == "true":
            assert status == 141


# -- config.yaml ----------------------------------------------------------------------


def test_config_yaml_not_utf8_is_one_line_with_its_position(home, project, run_rewind):
    (home / "config.yaml").write_bytes(b"checkpoints:\n  enabled: true\n  note: caf\xe9\n")
    for args in (["list", str(project)], ["status"], ["config"]):
        proc = run_rewind(*args)
        assert proc.returncode == 1
        line = one_line(proc)
        assert f"{home / 'config.yaml'}:3:" in line and "UTF-8" in line


def test_config_yaml_syntax_error_keeps_line_and_column(home, project, run_rewind):
    (home / "config.yaml").write_text("checkpoints:\n  enabled: true\n  max_snapshots: [5\n")
    proc = run_rewind("list", project)
    assert proc.returncode == 1
    assert f"{home / 'config.yaml'}:4:1: not valid YAML" in one_line(proc)
    (home / "config.yaml").write_text("checkpoints:\n  enabled: true\n   max_snapshots: 5\n")
    assert f"{home / 'config.yaml'}:3:" in one_line(run_rewind("list", project))


# -- rewind check ---------------------------------------------------------------------


def test_check_on_a_healthy_store(project, run_rewind):
    assert "nothing to check" in run_rewind("check", check=True).stdout
    run_rewind("checkpoint", project, "--label", "v1", check=True)
    proc = run_rewind("check", check=True)
    assert "no problems found" in proc.stdout
    assert "1 checkpoints" in proc.stdout.replace(",", "")


def test_check_repairs_a_damaged_stat_cache(project, run_rewind, store_dir, fsck):
    from rewindfs.store import project_hash

    run_rewind("checkpoint", project, check=True)
    index = store_dir / "worktrees" / project_hash(project) / "index"
    index.write_bytes(index.read_bytes()[:40])
    proc = run_rewind("check")
    assert proc.returncode == 3
    assert "index" in proc.stdout and "rewind check --repair" in proc.stdout
    repaired = run_rewind("check", "--repair")
    assert repaired.returncode == 0, repaired.stdout
    assert "repaired (1)" in repaired.stdout
    (project / "new.txt").write_text("new\n")
    assert run_rewind("checkpoint", project).returncode == 0
    assert run_rewind("check").returncode == 0
    fsck()


def test_check_removes_stale_locks_only_when_asked(project, run_rewind, store_dir):
    run_rewind("checkpoint", project, check=True)
    lock = store_dir / "packed-refs.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    proc = run_rewind("check")
    assert proc.returncode == 0  # not damage
    assert "packed-refs.lock" in proc.stdout and lock.exists()
    run_rewind("check", "--repair", check=True)
    assert not lock.exists()


def test_damaged_admin_dir_is_rewritten_by_the_next_command(project, run_rewind, store_dir):
    from rewindfs.store import project_hash

    run_rewind("checkpoint", project, check=True)
    admin = store_dir / "worktrees" / project_hash(project)
    (admin / "commondir").write_text("/nowhere\n")
    (admin / "HEAD").write_text("garbage")
    report = run_rewind("check")
    assert report.returncode == 3 and "commondir" in report.stdout
    (project / "new.txt").write_text("new\n")
    run_rewind("checkpoint", project, check=True)  # rewrites HEAD, commondir, gitdir
    assert run_rewind("check").returncode == 0


def test_check_json_lists_every_problem(project, run_rewind, store_dir):
    import json

    from rewindfs.store import project_hash

    run_rewind("checkpoint", project, check=True)
    (store_dir / "refs" / "hermes" / project_hash(project)).write_text("garbage\n")
    (store_dir / "shallow").write_text("not an id\n")
    proc = run_rewind("check", "--json")
    assert proc.returncode == 3
    report = json.loads(proc.stdout)
    paths = {os.path.relpath(p["path"], store_dir) for p in report["problems"]}
    assert {"shallow", f"refs/hermes/{project_hash(project)}"} <= paths
    assert report["damaged"] is True and "libgit2" in report
