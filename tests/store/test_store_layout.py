"""The on-disk store layout (Hermes v2 compatible) and isolation from the user's git config."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path

import pygit2

from rewindfs.store import take

DEFAULT_PATTERNS = [
    "node_modules/", "dist/", "build/", "__pycache__/", "*.pyc", ".venv/", ".git/",
    ".env", ".env.*", ".env.local", "*.log", ".DS_Store", "*.zip", ".worktrees/",
]


def h16(path: Path) -> str:
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]


def test_store_dir_created_private(store, project, home, store_dir):
    take(store, project, "first")
    assert store_dir.is_dir()
    assert (store_dir / "HEAD").is_file()
    assert stat.S_IMODE(store_dir.stat().st_mode) == 0o700
    repo = pygit2.Repository(str(store_dir))
    assert repo.is_bare


def test_store_dir_mode_repaired_when_loosened(store, project, store_dir):
    take(store, project, "first")
    os.chmod(store_dir, 0o755)
    (project / "new.txt").write_text("x\n")
    store.ensure()
    assert stat.S_IMODE(store_dir.stat().st_mode) == 0o700


def test_ref_name_is_sha256_of_resolved_workdir(store, project, tmp_path, store_dir):
    link = tmp_path / "link-to-proj"
    link.symlink_to(project)
    # Reach the project through a symlink and a `..` detour: the hash is of the resolved path.
    detour = link / "src" / ".."
    result = take(store, detour, "via symlink")
    expected = h16(project)
    assert result.project == expected
    repo = pygit2.Repository(str(store_dir))
    refs = [r for r in repo.references if r.startswith("refs/hermes/")]
    assert refs == [f"refs/hermes/{expected}"]
    assert str(repo.references[f"refs/hermes/{expected}"].target) == result.commit


def test_commits_are_parent_linked_with_reason_as_subject(store, project, store_dir, store_git):
    reasons = ["before write_file", "before patch: src/pkg/core.py", "pre-rollback snapshot"]
    commits = []
    for i, reason in enumerate(reasons):
        (project / f"f{i}.txt").write_text(f"{i}\n")
        result = take(store, project, reason)
        assert result.taken
        commits.append(result.commit)
    ref = f"refs/hermes/{h16(project)}"
    # Read back with the git CLI: parents and subjects.
    log = store_git("log", "--format=%H %P|%s", ref).stdout.strip().splitlines()
    assert len(log) == 3
    parsed = [line.split("|", 1) for line in log]
    hashes_parents = [p[0].split() for p in parsed]
    assert [hp[0] for hp in hashes_parents] == commits[::-1]
    assert hashes_parents[0][1:] == [commits[1]]
    assert hashes_parents[1][1:] == [commits[0]]
    assert hashes_parents[2][1:] == []  # the first checkpoint has no parent
    assert [p[1] for p in parsed] == reasons[::-1]


def test_project_record(store, project, store_dir):
    before = time.time()
    take(store, project, "first")
    record_path = store_dir / "projects" / f"{h16(project)}.json"
    data = json.loads(record_path.read_text())
    assert data["workdir"] == str(project.resolve())
    assert before - 1 <= data["created_at"] <= time.time()
    assert data["last_touch"] >= data["created_at"]
    parent = os.stat(project.parent)
    assert data["parent_dev"] == parent.st_dev
    assert data["parent_ino"] == parent.st_ino

    created = data["created_at"]
    written = record_path.stat().st_ino
    (project / "more.txt").write_text("more\n")
    take(store, project, "second")
    # last_touch counts days: a record touched within the hour is not written again
    assert record_path.stat().st_ino == written
    data["last_touch"] -= 3601  # an hour later
    record_path.write_text(json.dumps(data))
    (project / "more.txt").write_text("more, later\n")
    take(store, project, "third")
    data2 = json.loads(record_path.read_text())
    assert data2["created_at"] == created
    assert data2["last_touch"] > data["last_touch"] + 3600


def test_project_record_keeps_unknown_keys(store, project, store_dir):
    take(store, project, "first")
    record_path = store_dir / "projects" / f"{h16(project)}.json"
    data = json.loads(record_path.read_text())
    data["hermes_future_key"] = {"x": 1}
    record_path.write_text(json.dumps(data))
    (project / "more.txt").write_text("more\n")
    take(store, project, "second")
    assert json.loads(record_path.read_text())["hermes_future_key"] == {"x": 1}


def test_info_exclude_holds_default_excludes(store, project, store_dir):
    take(store, project, "first")
    lines = (store_dir / "info" / "exclude").read_text().splitlines()
    for pattern in DEFAULT_PATTERNS:
        assert pattern in lines, pattern


def test_store_config_isolates_bytes(store, project, store_dir):
    take(store, project, "first")
    text = (store_dir / "config").read_text()
    assert "autocrlf = false" in text
    assert "gpgsign = false" in text
    attributes = (store_dir / "info" / "attributes").read_text()
    assert "-text" in attributes and "-filter" in attributes


def test_fsck_strict_clean(store, project, fsck, tmp_path):
    take(store, project, "first")
    (project / "README.md").write_text("changed\n")
    take(store, project, "second")
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("a\n")
    take(store, other, "other project")
    fsck()


def test_user_directory_gets_no_git_files(store, project):
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    take(store, project, "first")
    after = sorted(p.relative_to(project) for p in project.rglob("*"))
    assert before == after
    assert not (project / ".git").exists()


def test_isolated_from_user_git_config(run_rewind, project, tmp_path, store_dir, files_of):
    """~/.gitconfig with autocrlf, an excludesFile ignoring *.py and gpgsign must not matter."""
    user_home = tmp_path / "evil-home"
    user_home.mkdir()
    (user_home / "global-ignore").write_text("*.py\n*.txt\n")
    (user_home / "attrs").write_text("* text=auto eol=lf\n")
    (user_home / ".gitconfig").write_text(
        "[core]\n"
        "\tautocrlf = true\n"
        f"\texcludesFile = {user_home / 'global-ignore'}\n"
        f"\tattributesFile = {user_home / 'attrs'}\n"
        "[commit]\n\tgpgsign = true\n"
        "[user]\n\tsigningkey = DEADBEEF\n"
    )
    xdg = user_home / ".config" / "git"
    xdg.mkdir(parents=True)
    (xdg / "ignore").write_text("*.md\n")
    crlf = b"line one\r\nline two\r\nno newline at end\r\n"
    (project / "windows.txt").write_bytes(crlf)
    (project / "mixed.cfg").write_bytes(b"a\r\nb\nc\r\n")
    py = (project / "src" / "pkg" / "core.py").read_bytes()

    proc = run_rewind("checkpoint", str(project), "-m", "isolated", "--json",
                      env={"HOME": str(user_home), "XDG_CONFIG_HOME": str(user_home / ".config")})
    assert proc.returncode == 0, proc.stderr
    commit = json.loads(proc.stdout)["hash"]
    files = files_of(commit)
    assert files[b"windows.txt"][1] == crlf
    assert files[b"mixed.cfg"][1] == b"a\r\nb\nc\r\n"
    assert files[b"src/pkg/core.py"][1] == py
    assert b"README.md" in files
    commit_obj = pygit2.Repository(str(store_dir))[commit]
    assert commit_obj.gpg_signature == (None, None)
