"""Nothing left out in silence (issue 47): what a checkpoint leaves out is recorded in it (a
trailer Hermes never shows) and named by `rewind show` and `rewind restore`.

The issue's case: git tracks app/env/prod.py and app/build/steps.py (the default excludes
`env/` and `build/` match them) and a 12 MB data/train.csv (over max_file_size_mb); after
`rm -rf app data`, `rewind restore 1` said "2 file(s) written" and nothing mentioned the
three files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pygit2
from conftest import make_git_repo

MB = 1000 * 1000
CSV = b"id,label\n" + b"1,a\n" * (3 * MB)   # 12 MB


def issue_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    make_git_repo(root, {"app/env/prod.py": b"DB = 'prod'\n",
                         "app/build/steps.py": b"steps = [1]\n",
                         "app/main.py": b"main()\n", "README.md": b"# p\n",
                         "data/train.csv": CSV})
    return root


def test_the_issues_case_restore_names_what_the_checkpoint_left_out(run_rewind, tmp_path):
    root = issue_project(tmp_path)
    run_rewind("checkpoint", "-C", root, check=True)
    shutil.rmtree(root / "app")
    shutil.rmtree(root / "data")
    done = run_rewind("restore", "1", "--yes", "-C", root, check=True)
    # The two tracked files are back; the 12 MB one is named as not in the checkpoint.
    assert (root / "app/env/prod.py").read_bytes() == b"DB = 'prod'\n"
    assert (root / "app/build/steps.py").read_bytes() == b"steps = [1]\n"
    assert "3 file(s) written" in done.stdout, done.stdout
    out = done.stdout.splitlines()
    [at] = [i for i, ln in enumerate(out) if "data/train.csv" in ln]
    assert "(checkpoint 1: manual checkpoint), so not restored (1 file(s) it left out)" in \
        out[at - 1], done.stdout
    assert out[at].strip() == "data/train.csv (11.4 MiB, over the size cap, " \
        "max_file_size_mb); missing now", done.stdout
    data = json.loads(run_rewind("restore", "1", "--yes", "--json", "-C", root,
                                 check=True).stdout)
    assert data["left_out"] == [{"kind": "oversize", "path": "data/train.csv",
                                 "size": len(CSV), "why": "over the size cap, "
                                 "max_file_size_mb"}], data


def test_show_names_what_a_checkpoint_left_out(run_rewind, tmp_path):
    root = issue_project(tmp_path)
    (root / ".rewindignore").write_text("app/main.py\n")
    run_rewind("checkpoint", "-C", root, check=True)
    shown = run_rewind("show", "1", "-C", root, check=True).stdout
    [head, *rest] = [ln for ln in shown.splitlines() if "left out" in ln or ln.startswith(
        "    ")]
    assert "2 file(s) left out" in head, shown
    assert any("data/train.csv (11.4 MiB, over the size cap" in ln for ln in rest), shown
    assert any("app/main.py" in ln and ".rewindignore" in ln for ln in rest), shown
    report = json.loads(run_rewind("show", "1", "--json", "-C", root, check=True).stdout)
    assert {e["path"] for e in report["left_out"]} == {"data/train.csv", "app/main.py"}


def test_a_checkpoint_is_taken_when_only_what_it_leaves_out_changed(run_rewind, tmp_path):
    """The tree did not change (the new file is over the cap), but the newest checkpoint
    must say the project holds a file it does not."""
    root = issue_project(tmp_path)
    (root / "data" / "train.csv").unlink()
    run_rewind("checkpoint", "-C", root, check=True)
    (root / "data" / "train.csv").write_bytes(CSV)
    done = json.loads(run_rewind("checkpoint", "--json", "-C", root, check=True).stdout)
    assert done["taken"] is True, done
    listed = json.loads(run_rewind("list", "--json", "-C", root, check=True).stdout)
    assert len(listed) == 2 and listed[0]["files_changed"] == 0, listed
    assert "data/train.csv" in run_rewind("show", "1", "-C", root, check=True).stdout
    # Nothing changed since: nothing written.
    again = json.loads(run_rewind("checkpoint", "--json", "-C", root, check=True).stdout)
    assert again["taken"] is False


def test_a_hermes_reader_sees_only_the_reason(run_rewind, tmp_path, home):
    root = issue_project(tmp_path)
    run_rewind("checkpoint", "-C", root, "-m", "before cleanup", check=True)
    repo = pygit2.Repository(str(home / "checkpoints" / "store"))
    [name] = [r for r in repo.references if r.startswith("refs/hermes/")]
    message = repo.references[name].peel(pygit2.Commit).message
    subject, _, trailers = message.partition("\n\n")
    assert subject == "before cleanup"   # Hermes's `git log --format=%s`
    assert "Rewind-Left-Out: " in trailers and "data/train.csv" in trailers
