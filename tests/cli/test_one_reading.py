"""One reading of the store (issue 32): what `rewind list` numbers is what `cat`, `show` and
`restore` act on, and what git itself says the store holds is what every command says.

Each test builds the case the issue found the two readers disagreeing on (labels tied in
one second, a label file with a name git rejects, a pack index with swapped offsets, a
pack cut short, an ignore-file edit, a history record edited, a ref listed twice in
packed-refs), shows the case is there (git as the witness), then runs the real `rewind`.
"""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from pathlib import Path

import pytest
from conftest import settle, wait_for

from rewindfs.store import project_hash, set_label, take


def stamped_checkpoint(run_rewind, project: Path, store_dir: Path, *args: str) -> None:
    """`rewind checkpoint ARGS` of a settled tree (nothing touched within the stamp's racy
    window), then wait for the stat stamp its detached child writes."""
    settle(project)
    stamps = store_dir / "stamps" / f"{project_hash(project)}.json"
    before = stamps.stat().st_mtime_ns if stamps.exists() else 0
    run_rewind("checkpoint", *args, cwd=project, check=True)
    wait_for(lambda: stamps.exists() and stamps.stat().st_mtime_ns != before,
             "the stamp the checkpoint leaves behind")


def listed(run_rewind, project: Path) -> list[dict]:
    done = run_rewind("list", "--json", cwd=project, check=True)
    return json.loads(done.stdout)


def numbered(run_rewind, project: Path) -> dict[int, str]:
    """number -> checkpoint id, as `rewind list --json` numbers them."""
    return {e["number"]: e["hash"] for e in listed(run_rewind, project) if e.get("number")}


def commit_time(store_git, commit: str) -> int:
    return int(store_git("log", "-1", "--format=%ct", commit).stdout)


def restored(run_rewind, project: Path, number: int) -> str:
    """What `rewind restore N --yes` puts in a.txt (undone again afterwards)."""
    (project / "a.txt").write_text("the tree as it is now\n")  # something to restore over
    run_rewind("restore", str(number), "--yes", cwd=project, check=True)
    text = (project / "a.txt").read_text()
    run_rewind("undo", cwd=project, check=True)
    return text


def test_labels_tied_in_one_second_are_numbered_alike_everywhere(project, store, store_git,
                                                                 run_rewind):
    """Case 1: two labelled checkpoints taken within one second, pruned out of the chain:
    every command numbers them by (time, then commit id), and the number `list` shows is
    the one `cat`, `show` and `restore` act on."""
    h16 = project_hash(project)
    for _attempt in range(20):  # until both land in one second (each takes milliseconds)
        ids = []
        for name in ("a", "b"):
            (project / "a.txt").write_text(f"labelled {name} {time.time_ns()}\n")
            ids.append(take(store, project, f"labelled {name}").commit)
        if commit_time(store_git, ids[0]) == commit_time(store_git, ids[1]):
            break
    else:
        pytest.fail("could not take two checkpoints within one second")
    for name, commit in zip(("la", "lb"), ids, strict=True):
        set_label(store, h16, name, commit)
    for i in range(3):  # prune both out of the chain (their labels keep them)
        (project / "a.txt").write_text(f"later {i}\n")
        take(store, project, f"later {i}", keep=2)
    chain = store_git("rev-list", "--first-parent", f"refs/hermes/{h16}").stdout.split()
    assert not set(ids) & set(chain), "the labelled ones are still in the chain"
    numbers = numbered(run_rewind, project)
    pinned = sorted(ids)  # a tie in time: ordered by commit id
    want = {number: commit for number, commit in numbers.items() if commit in ids}
    assert list(want.values()) == pinned, (want, pinned)
    for number, commit in want.items():
        content = store_git("show", f"{commit}:a.txt").stdout
        assert run_rewind("cat", str(number), "a.txt", cwd=project, check=True).stdout == content
        shown = run_rewind("show", str(number), cwd=project, check=True).stdout
        assert commit[:8] in shown
        assert restored(run_rewind, project, number) == content


@pytest.mark.parametrize("bad", ["v1 (conflicted copy)", ".hidden", "a..b", "x~1", "123",
                                 "latest"])
def test_a_label_with_a_name_no_label_has_is_left_out_by_every_command(
        bad, project, store, store_git, store_dir, run_rewind):
    """Case 2: a label ref whose name git (or rewindfs) rejects, pointing at a pre-rollback
    snapshot, is named once as damage and skipped alike by list, cat, show and restore:
    no number shifts, and the name resolves nowhere."""
    h16 = project_hash(project)
    (project / "a.txt").write_text("one\n")
    take(store, project, "one")
    (project / "a.txt").write_text("two\n")
    take(store, project, "two")
    (project / "a.txt").write_text("three, never a checkpoint\n")
    run_rewind("restore", "2", "--yes", cwd=project, check=True)  # a pre-rollback snapshot
    pre = [e["hash"] for e in listed(run_rewind, project) if not e.get("number")]
    assert len(pre) == 1
    before = numbered(run_rewind, project)
    label_dir = store_dir / "refs" / "rewind" / "labels" / h16
    label_dir.mkdir(parents=True, exist_ok=True)
    (label_dir / bad).write_text(pre[0] + "\n")
    assert store_git("cat-file", "-t", pre[0]).stdout.strip() == "commit"
    done = run_rewind("list", "--json", cwd=project, check=True)
    assert {e["number"]: e["hash"] for e in json.loads(done.stdout) if e.get("number")} == before
    assert done.stderr.count("no label can have") == 1, done.stderr
    assert not [e for e in json.loads(done.stdout) if bad in e.get("labels", [])]
    for number, commit in before.items():
        content = store_git("show", f"{commit}:a.txt").stdout
        assert run_rewind("cat", str(number), "a.txt", cwd=project, check=True).stdout == content
        assert restored(run_rewind, project, number) == content
    for args in (["cat", bad, "a.txt"], ["show", bad], ["restore", bad, "--dry-run"]):
        proc = run_rewind(*args, cwd=project)  # (`latest` and `123` are references too)
        assert pre[0][:8] not in proc.stdout and "three" not in proc.stdout, (args, proc.stdout)


def packed(store_git) -> tuple[Path, Path]:
    """Repack the store into one pack (git itself); its .idx and .pack."""
    store_git("repack", "-a", "-d", "-q")
    pack_dir = Path(store_git("rev-parse", "--git-path", "objects/pack").stdout.strip())
    if not pack_dir.is_absolute():
        pack_dir = Path(store_git("rev-parse", "--absolute-git-dir").stdout.strip()) / pack_dir
    [idx] = pack_dir.glob("*.idx")
    return idx, idx.with_suffix(".pack")


def swap_offsets(idx: Path, first: str, second: str) -> None:
    """Swap the pack offsets of two objects in a v2 pack index (the index's own checksum
    written again, so only the swap is wrong)."""
    data = bytearray(idx.read_bytes())
    count = struct.unpack_from(">I", data, 8 + 255 * 4)[0]
    names = 8 + 256 * 4
    ids = [bytes(data[names + 20 * i: names + 20 * (i + 1)]).hex() for i in range(count)]
    offsets = names + 20 * count + 4 * count
    i, j = ids.index(first), ids.index(second)
    a, b = data[offsets + 4 * i: offsets + 4 * i + 4], data[offsets + 4 * j: offsets + 4 * j + 4]
    data[offsets + 4 * i: offsets + 4 * i + 4], data[offsets + 4 * j: offsets + 4 * j + 4] = b, a
    import hashlib

    data[-20:] = hashlib.sha1(data[:-20]).digest()
    os.chmod(idx, 0o600)
    idx.write_bytes(bytes(data))


def test_a_pack_index_with_swapped_offsets_is_damage_not_the_other_file(
        project, store, store_git, run_rewind):
    """Case 3: libgit2 checks every object it reads against its id: the file that reads as
    another's bytes is damage (exit 3, one line), never printed as if it were that file."""
    (project / "a.txt").write_text("the bytes of a\n" * 20)
    (project / "b.txt").write_text("the bytes of b, not a\n" * 20)
    commit = take(store, project, "two files").commit
    a = store_git("rev-parse", f"{commit}:a.txt").stdout.strip()
    b = store_git("rev-parse", f"{commit}:b.txt").stdout.strip()
    idx, _pack = packed(store_git)
    swap_offsets(idx, a, b)
    witness = store_git("cat-file", "blob", a, check=False)
    assert witness.returncode != 0 or witness.stdout != "the bytes of a\n" * 20  # the swap is real
    for args in (["cat", "1", "a.txt"], ["show", "1:a.txt"]):
        proc = run_rewind(*args, cwd=project)
        assert proc.returncode == 3, (args, proc.returncode, proc.stdout, proc.stderr)
        assert "the bytes of b" not in proc.stdout
        assert proc.stderr.count("\n") == 1 and "damaged" in proc.stderr, proc.stderr


def test_a_pack_cut_short_is_damage(project, store, store_git, run_rewind):
    """Case 4: a pack missing its last 20 bytes (its checksum) is said, never read on."""
    (project / "a.txt").write_text("the bytes of a\n" * 20)
    take(store, project, "one")
    _idx, pack = packed(store_git)
    size = pack.stat().st_size
    os.truncate(pack, size - 20)
    assert pack.stat().st_size == size - 20
    assert store_git("fsck", check=False).returncode != 0  # git agrees: damaged
    proc = run_rewind("cat", "1", "a.txt", cwd=project)
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.parametrize("edit", ["drops", "brings back"])
def test_an_ignore_file_edit_is_seen_by_diff_stat(edit, project, store_dir, run_rewind):
    """Case 5: a `.gitignore` edit that drops a file (or brings one back) changes what a
    checkpoint of the tree would hold: `diff --stat` says so, as a checkpoint then takes,
    though the project's stat stamp names only the ignore file as changed."""
    (project / "notes.txt").write_text("kept notes\n")
    (project / ".gitignore").write_text("" if edit == "drops" else "notes.txt\n")
    stamped_checkpoint(run_rewind, project, store_dir)
    (project / ".gitignore").write_text("notes.txt\n" if edit == "drops" else "")
    stat = run_rewind("diff", "--stat", cwd=project, check=True).stdout
    assert "notes.txt" in stat and ".gitignore" in stat, stat
    run_rewind("checkpoint", cwd=project, check=True)
    names = run_rewind("diff", "2", "1", "--name-only", cwd=project, check=True).stdout.split()
    assert sorted(names) == [".gitignore", "notes.txt"]


def edit_record(store_dir: Path, h16: str, commit: str, reason: str) -> None:
    """Rewrite the history record of `commit` with another reason, its CRC made right:
    an edit the file's own checks cannot see."""
    path = store_dir / "caches" / f"{h16}.history"
    out = []
    for line in path.read_bytes().splitlines(keepends=True):
        if line.startswith(commit.encode()):
            text = line.rstrip(b"\n").rpartition(b"\t")[0]
            head, rest = text[:100], json.loads(text[100:])
            rest[3] = reason
            text = head + json.dumps(rest, separators=(",", ":")).encode()
            line = text + b"\t" + b"%08x" % zlib.crc32(text) + b"\n"
        out.append(line)
    path.write_bytes(b"".join(out))


def test_an_edited_history_record_never_makes_commands_disagree(project, store, store_dir,
                                                                store_git, run_rewind):
    """Case 6: every command reads through the same records, each checked against its
    commit where a command acts on it: an edited record is found, dropped, and every
    command then says what the commits say."""
    h16 = project_hash(project)
    ids = []
    for i in range(3):
        (project / "a.txt").write_text(f"version {i}\n")
        ids.append(take(store, project, f"step {i}").commit)
    listed(run_rewind, project)  # records written
    edit_record(store_dir, h16, ids[1], "forged reason")
    assert b"forged reason" in (store_dir / "caches" / f"{h16}.history").read_bytes()
    shown = run_rewind("show", "2", cwd=project, check=True)
    assert "step 1" in shown.stdout and "forged" not in shown.stdout
    for args in (["list"], ["list", "--json"]):
        out = run_rewind(*args, cwd=project, check=True).stdout
        assert "forged" not in out and "step 1" in out, (args, out)
    assert run_rewind("cat", "2", "a.txt", cwd=project, check=True).stdout == "version 1\n"
    assert store_git("log", "-1", "--format=%s", ids[1]).stdout.strip() == "step 1"


def test_a_ref_listed_twice_in_packed_refs_is_read_as_git_reads_it(project, store, store_dir,
                                                                   store_git, run_rewind):
    """Case 7: the project ref twice in packed-refs (first line one commit, last line
    another): the stamp, the hooks and `rewind checkpoint` read it as git and libgit2 do
    (the last line), never "no changes since" a tip git does not name."""
    h16 = project_hash(project)
    (project / "a.txt").write_text("one\n")
    first = take(store, project, "one").commit
    (project / "a.txt").write_text("two\n")
    stamped_checkpoint(run_rewind, project, store_dir, "-m", "two")
    second = store_git("rev-parse", f"refs/hermes/{h16}").stdout.strip()
    assert json.loads((store_dir / "stamps" / f"{h16}.json").read_text())["commit"] == second
    ref = f"refs/hermes/{h16}"
    store_git("pack-refs", "--all")
    packed_refs = store_dir / "packed-refs"
    lines = [ln for ln in packed_refs.read_text().splitlines() if not ln.endswith(ref)]
    lines += [f"{second} {ref}", f"{first} {ref}"]  # git reads the last
    packed_refs.write_text("\n".join(lines) + "\n")
    assert store_git("rev-parse", ref).stdout.strip() == first  # git's witness
    done = run_rewind("checkpoint", "--json", cwd=project, check=True)
    result = json.loads(done.stdout)
    # The tree is `second`'s, git's tip is `first`: a checkpoint is due, on top of `first`.
    assert result["taken"] is True, done.stdout
    assert store_git("rev-parse", f"{result['hash']}^").stdout.strip() == first


def test_a_checkpoint_id_names_its_project_anywhere(project, tmp_path, store, store_git,
                                                    run_rewind):
    """An id copied from `rewind list --all-projects` (in full, or 8+ digits) reads that
    checkpoint from inside any other project; a restore of it without --to refuses (the
    command named no project to change), with --to DIR it writes it there."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("of the other project\n")
    theirs = take(store, other, "theirs").commit
    (project / "a.txt").write_text("ours\n")
    take(store, project, "ours")
    listed_all = run_rewind("list", "--all-projects", "--json", cwd=project, check=True)
    assert theirs in listed_all.stdout
    for given in (theirs, theirs[:8]):
        done = run_rewind("cat", given, "o.txt", cwd=project, check=True)
        assert done.stdout == "of the other project\n"
        assert json.loads(run_rewind("show", "--json", given, cwd=project,
                                     check=True).stdout)["hash"] == theirs
    refused = run_rewind("restore", theirs, "--yes", cwd=project)
    assert refused.returncode == 1 and str(other) in refused.stderr, refused.stderr
    assert (project / "a.txt").read_text() == "ours\n" and not (project / "o.txt").exists()
    dest = tmp_path / "copy"
    run_rewind("restore", theirs[:10], "--to", str(dest), cwd=project, check=True)
    assert (dest / "o.txt").read_text() == "of the other project\n"
    missing = run_rewind("cat", "deadbeefdeadbeef", "a.txt", cwd=project)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
