"""The real `rewind` console script: checkpoint, list, diff; errors and exit codes."""

from __future__ import annotations

import json
import re

import pytest


def one_line_error(proc) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {proc.stderr!r}"
    assert lines[0].startswith("rewind: "), lines[0]
    return lines[0]


@pytest.fixture
def history(store, project):
    """Three checkpoints of `project` (taken in-process to keep the suite fast; the CLI's
    own `checkpoint` is tested separately); returns their hashes newest first."""
    from rewindfs.store import take

    hashes = []
    for i, msg in enumerate(["first", "second", "third"]):
        (project / f"f{i}.txt").write_text(f"{i}\n")
        result = take(store, project, msg)
        assert result.taken
        hashes.append(result.commit)
    return hashes[::-1]


def test_checkpoint_text_output(run_rewind, project):
    proc = run_rewind("checkpoint", project, "-m", "before refactor", check=True)
    assert re.match(r"^checkpoint [0-9a-f]{8} taken for .*proj: before refactor$",
                    proc.stdout.strip()), proc.stdout
    proc = run_rewind("checkpoint", project, check=True)
    assert "no changes" in proc.stdout


def test_checkpoint_from_cwd_finds_project_root(run_rewind, project):
    (project / "pyproject.toml").write_text("[project]\nname='x'\n")
    proc = run_rewind("checkpoint", "--json", cwd=project / "src" / "pkg", check=True)
    data = json.loads(proc.stdout)
    assert data["directory"] == str(project.resolve())


def test_checkpoint_json(run_rewind, project):
    proc = run_rewind("checkpoint", project, "--json", "--label", "v1", check=True)
    data = json.loads(proc.stdout)
    assert data["taken"] is True
    assert re.fullmatch(r"[0-9a-f]{40}", data["hash"])
    assert data["label"] == "v1"
    assert data["directory"] == str(project.resolve())
    assert data["skipped_files"] == {}


def test_list_numbering_and_json(run_rewind, project, history):
    proc = run_rewind("list", project, check=True)
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("Checkpoints for ")
    assert re.match(rf"^\s+1\.\s+{history[0][:8]}\s.* third\b", lines[1]), lines[1]
    assert re.match(rf"^\s+3\.\s+{history[2][:8]}\s.* first\b", lines[3]), lines[3]
    data = json.loads(run_rewind("list", project, "--json", check=True).stdout)
    assert [c["hash"] for c in data] == history
    assert [c["number"] for c in data] == [1, 2, 3]
    assert [c["reason"] for c in data] == ["third", "second", "first"]
    for c in data:
        assert {"hash", "short_hash", "timestamp", "reason", "files_changed", "insertions",
                "deletions"} <= set(c)
    assert data[0]["files_changed"] == 1 and data[0]["insertions"] == 1


def test_list_all_projects_json(run_rewind, project, history, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("x\n")
    run_rewind("checkpoint", other, check=True)
    data = json.loads(run_rewind("list", "--all-projects", "--json", check=True).stdout)
    by_dir = {d["directory"]: d["checkpoints"] for d in data}
    assert len(by_dir[str(project.resolve())]) == 3
    assert len(by_dir[str(other.resolve())]) == 1


def test_list_empty_store(run_rewind, project):
    proc = run_rewind("list", project, check=True)
    assert "No checkpoints" in proc.stdout
    assert json.loads(run_rewind("list", project, "--json", check=True).stdout) == []


def test_list_shows_labels(run_rewind, project, history):
    run_rewind("checkpoint", project, "--label", "keep-me", check=True)  # labels the tip
    proc = run_rewind("list", project, check=True)
    assert "[keep-me]" in proc.stdout.splitlines()[1]


def test_diff_stat_then_patch(run_rewind, project, history):
    (project / "f0.txt").write_text("zero\n")
    proc = run_rewind("diff", "3", "-C", project, check=True)
    out = proc.stdout
    stat_at = out.index("files changed")
    patch_at = out.index("diff --git")
    assert stat_at < patch_at
    assert " f0.txt " in out.split("\n\n")[0] or "f0.txt |" in out
    assert "-0" in out and "+zero" in out


def test_diff_truncated_unless_full(run_rewind, project):
    run_rewind("checkpoint", project, check=True)
    (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    proc = run_rewind("diff", "1", "-C", project, check=True)
    lines = proc.stdout.splitlines()
    assert "+line 50" in proc.stdout
    assert "+line 199" not in proc.stdout
    assert re.search(r"\d+ more lines", lines[-1]), lines[-1]
    assert "--full" in lines[-1]
    patch_start = lines.index("") + 1
    assert len(lines[patch_start:-1]) == 80
    full = run_rewind("diff", "1", "-C", project, "--full", check=True)
    assert "+line 199" in full.stdout
    assert "more lines" not in full.stdout


def test_diff_between_two_checkpoints(run_rewind, project, history):
    proc = run_rewind("diff", "3", "1", "-C", project, check=True)
    assert "f1.txt" in proc.stdout and "f2.txt" in proc.stdout
    assert "f0.txt" not in proc.stdout
    by_hash = run_rewind("diff", history[2][:10], history[0], "-C", project, check=True)
    assert by_hash.stdout == proc.stdout


def test_diff_stat_and_name_only(run_rewind, project, history):
    stat = run_rewind("diff", "3", "1", "-C", project, "--stat", check=True).stdout
    assert "diff --git" not in stat
    assert "2 files changed" in stat
    names = run_rewind("diff", "3", "1", "-C", project, "--name-only", check=True).stdout
    assert names.splitlines() == ["f1.txt", "f2.txt"]


def test_diff_binary(run_rewind, project):
    (project / "img.bin").write_bytes(b"\x89PNG\x00\x00\x01")
    run_rewind("checkpoint", project, check=True)
    (project / "img.bin").write_bytes(b"\x89PNG\x00\x00\x02\x03")
    proc = run_rewind("diff", "1", "-C", project, check=True)
    assert re.search(r"Binary files a/img.bin and b/img.bin differ", proc.stdout), proc.stdout


def test_diff_no_changes(run_rewind, project, history):
    proc = run_rewind("diff", "1", "-C", project, check=True)
    assert proc.stdout.strip() == "no changes"


def test_unknown_checkpoint_exit_1_one_line(run_rewind, project, history):
    proc = run_rewind("diff", "9", "-C", project)
    assert proc.returncode == 1
    assert "9" in one_line_error(proc)
    proc = run_rewind("diff", "nosuchlabel", "-C", project)
    assert proc.returncode == 1
    one_line_error(proc)


def test_dash_reference_is_an_error_not_an_option(run_rewind, project, history):
    proc = run_rewind("show", "-C", project, "--", "-1")
    assert proc.returncode == 1
    assert "invalid checkpoint reference" in one_line_error(proc)


def test_usage_errors_exit_2(run_rewind, project):
    for args in [("diff", "1", "2", "3"), ("frobnicate",), ("list", "--no-such-flag"),
                 ("diff", "1", "--stat", "--bogus")]:
        proc = run_rewind(*args, cwd=project)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_errors_are_one_line(run_rewind, project, tmp_path):
    # no store yet
    proc = run_rewind("diff", "1", "-C", project)
    assert proc.returncode == 1
    one_line_error(proc)
    # missing directory
    proc = run_rewind("checkpoint", tmp_path / "missing")
    assert proc.returncode == 1
    one_line_error(proc)
    # bad label
    proc = run_rewind("checkpoint", project, "--label", "latest")
    assert proc.returncode == 1
    one_line_error(proc)


def test_refuses_home_and_root(run_rewind, tmp_path):
    proc = run_rewind("checkpoint", "/")
    assert proc.returncode == 1
    assert "too broad" in one_line_error(proc)
    user_home = tmp_path / "user-home"
    (user_home / "notes.txt").write_text("n\n")
    proc = run_rewind("checkpoint", user_home)
    assert proc.returncode == 1
    assert "too broad" in one_line_error(proc)


def test_duplicate_label_refused_before_checkpoint(run_rewind, project, history):
    run_rewind("checkpoint", project, "--label", "stable", check=True)
    before = json.loads(run_rewind("list", project, "--json", check=True).stdout)
    (project / "new.txt").write_text("new\n")
    proc = run_rewind("checkpoint", project, "--label", "stable")
    assert proc.returncode == 1
    assert "stable" in one_line_error(proc)
    # refused before capturing: no new checkpoint, the label still names the first one
    data = json.loads(run_rewind("list", project, "--json", check=True).stdout)
    assert [c["hash"] for c in data] == [c["hash"] for c in before]
    assert data[0]["labels"] == ["stable"]


def test_list_of_a_missing_directory_exits_1(run_rewind, project, tmp_path):
    proc = run_rewind("list", tmp_path / "nonexistent")
    assert proc.returncode == 1
    assert "no such directory" in one_line_error(proc)


def test_list_of_a_deleted_project_still_shows_its_checkpoints(run_rewind, project):
    import shutil

    run_rewind("checkpoint", project, check=True)
    shutil.rmtree(project)
    proc = run_rewind("list", project, check=True)
    assert "1." in proc.stdout


def test_max_files_refused_exit_1(run_rewind, project):
    for i in range(10):
        (project / f"x{i}.txt").write_text("x\n")
    proc = run_rewind("checkpoint", project, env={"REWIND_MAX_FILES": "5"})
    assert proc.returncode == 1
    assert "max_files" in one_line_error(proc)


def test_oversize_reported_on_stderr(run_rewind, project):
    (project / "huge.bin").write_bytes(b"h" * (1024 * 1024 + 1))
    proc = run_rewind("checkpoint", project, env={"REWIND_MAX_FILE_SIZE_MB": "1"}, check=True)
    assert "huge.bin" in proc.stderr and "max_file_size_mb" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_corrupt_store_exit_3(run_rewind, project, history, store_dir):
    (store_dir / "HEAD").write_text("garbage\n")
    (store_dir / "objects").rename(store_dir / "objects.moved")
    proc = run_rewind("list", project)
    assert proc.returncode == 3, proc.stderr
    one_line_error(proc)
