"""A long history listed from its tip as far as it is shown (store.history.records.listpage): the
records file of this version (store.history.records.recordfile) and its chain summaries.

Each test builds a history of more than cli.output.listing.EXACT_ROWS checkpoints on a real store
(one real checkpoint, then commits written with libgit2 on the project's ref, as a long
session leaves them), and holds what is listed from the records to what the commits say.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import pygit2
import pytest
from conftest import REWIND

from rewindfs.cli.output import listing
from rewindfs.store import checkpoints, project_hash, set_label, take
from rewindfs.store.history import chain
from rewindfs.store.history.prune import enforce_max_snapshots
from rewindfs.store.history.records import listpage, recordfile, records, recordtail
from rewindfs.store.objects import Layout

LONG = listing.EXACT_ROWS + 60
AGE = re.compile(r" *\b(now|\d+[smhd] ago)\b")


def extend(store, project, n: int, *, start: int = 0, reason=None) -> list[str]:
    """`n` more checkpoints on the project's ref (the same files), newest last."""
    repo = pygit2.Repository(str(store.layout.store))
    ref = Layout.project_ref(project_hash(project))
    tip = repo.references[ref].target
    tree = repo[tip].peel(pygit2.Commit).tree_id
    made = []
    for i in range(start, start + n):
        when = 1_700_000_000 + 60 * i
        sig = pygit2.Signature("rewindfs", "rewindfs@local", when, 0)
        text = reason(i) if reason else f"step {i}"
        message = f"{text}\n\nRewind-Stats: files=1 insertions={i} deletions=0\n" \
                  f"Rewind-Time: {when}.000000\n"
        tip = repo.create_commit(None, sig, sig, message, tree, [tip])
        made.append(str(tip))
    repo.references.create(ref, tip, force=True)
    return made


@pytest.fixture
def long(store, project):
    take(store, project, "first")
    # Some reasons further down are longer than any on the first screen: they wrap.
    ids = extend(store, project, LONG, reason=lambda i: f"step {i}" + (
        " with a much longer reason than the first screen has"
        if i % 50 == 7 and i < LONG - 70 else ""))
    return ids


def env_for(home, tmp_path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "REWIND_"))}
    out["REWIND_NO_SERVER"] = "1"   # run in its own process (no resident one)
    out.update(HERMES_HOME=str(home), HOME=str(tmp_path), LC_ALL="C.UTF-8")
    return out


def listing_of(project, env) -> subprocess.CompletedProcess:
    """`rewind list` in the project, its imports listed on stderr (-X importtime)."""
    return subprocess.run([sys.executable, "-X", "importtime", REWIND, "list"], cwd=project,
                          env=env, capture_output=True, timeout=120)


def table_rows(text: str) -> list[str]:
    return text.splitlines()[1:]


def test_long_list_pages_and_says_what_the_commits_say(store, project, home, tmp_path, long):
    env = env_for(home, tmp_path)
    first = subprocess.run([REWIND, "list", "-C", str(project)], env=env, capture_output=True,
                           timeout=120, check=True)  # reads the records whole, once
    path = records.cache_path(store.layout.store, project_hash(project))
    assert recordtail.Tail(path).summary()[0].count == LONG + 1, "a summary was written"
    again = listing_of(project, env)
    assert again.returncode == 0, again.stderr[-400:]
    assert "rewindfs.store.history.records.listpage" in again.stderr.decode()  # paged
    assert AGE.sub(" AGE", again.stdout.decode()) == AGE.sub(" AGE", first.stdout.decode())

    lines = table_rows(again.stdout.decode())
    repo = pygit2.Repository(str(store.layout.store))
    truth = checkpoints(repo, project_hash(project), from_objects=True)
    rows = [line for line in lines if line.split()[0].rstrip(".").isdigit()]
    assert [(int(r.split()[0].rstrip(".")), r.split()[1]) for r in rows] \
        == [(cp.number, cp.short) for cp in truth]
    # One table: every id starts in one column; a long reason wraps in its own column.
    at = {line.index(line.split()[1]) for line in rows}
    assert len(at) == 1
    column = at.pop()
    wrapped = [line for line in lines if line not in rows]
    assert wrapped and all(not line[:column + 8].strip() for line in wrapped)
    changes = {line.index("1 file") for line in rows if "1 file" in line}
    assert len(changes) == 1, "the changes column stays one column"


def test_the_first_screen_reads_the_rows_it_shows(store, project, long, monkeypatch):
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    checkpoints(repo, h16)  # the summary
    decoded = []
    real = recordfile.decode
    monkeypatch.setattr(recordfile, "decode", lambda text: decoded.append(1) or real(text))
    page = chain.page(repo, h16)
    assert page is not None and page.rows == LONG + 1
    head = page.head(60)
    assert len(decoded) <= 61, "only the rows shown are parsed"
    assert [cp.number for cp in head] == list(range(1, 61))
    assert page.numbered == LONG + 1
    whole = list(page)
    truth = checkpoints(repo, h16, from_objects=True)
    assert [(cp.id, cp.number, cp.root, cp.parent_id) for cp in whole] \
        == [(cp.id, cp.number, cp.root, cp.parent_id) for cp in truth]


def test_checkpoints_taken_since_the_summary_are_walked(store, project, long):
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    checkpoints(repo, h16)
    newer = extend(store, project, 5, start=LONG)
    page = chain.page(repo, h16)
    assert page is not None and page.rows == LONG + 6
    assert [cp.id for cp in page.head(5)] == newer[::-1]


@pytest.mark.parametrize("change", ["label", "prune", "delete-newest", "no-summary"])
def test_a_summary_that_no_longer_holds_is_not_used(store, project, long, change):
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    checkpoints(repo, h16)
    assert chain.page(repo, h16) is not None
    if change == "label":
        set_label(store, h16, "old", long[10])
    elif change == "prune":
        # (a chain within listpage.MAX_WALK of its tip would just be walked whole)
        assert enforce_max_snapshots(repo, store.layout, h16, listpage.MAX_WALK + 2) > 0
    elif change == "delete-newest":
        repo.references.create(Layout.project_ref(h16), long[-2], force=True)
    else:
        path = records.cache_path(store.layout.store, h16)
        path.write_bytes(b"".join(line + b"\n" for line in path.read_bytes().splitlines()
                                  if not line.startswith(recordfile.CHAIN)))
    assert chain.page(repo, h16) is None, "the chain is read whole"
    truth = checkpoints(repo, h16, from_objects=True)
    recorded = checkpoints(repo, h16)  # writes a summary that holds again
    page = chain.page(repo, h16)
    assert page is not None
    assert [(cp.id, cp.number, cp.labels) for cp in page] \
        == [(cp.id, cp.number, cp.labels) for cp in recorded] \
        == [(cp.id, cp.number, cp.labels) for cp in truth]


@pytest.mark.parametrize("damage", ["older-version", "torn-append", "mac", "cut"])
def test_a_damaged_or_older_records_file_never_lists_wrong(store, project, home, tmp_path,
                                                            long, damage):
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    checkpoints(repo, h16)
    path = records.cache_path(store.layout.store, h16)
    data = path.read_bytes()
    lines = data.split(b"\n")
    if damage == "older-version":  # what version 3 wrote: JSON arrays under its header
        data = b"rewindfs history records v3\n" + b"".join(
            b'["%s"]\tdeadbeef\n' % line[:40] for line in lines[2:-1])
    elif damage == "torn-append":
        data += lines[-3][:70]  # half a line, as a writer killed mid-append leaves it
    elif damage == "mac":  # the record of the checkpoint 30 rows down says another reason
        target = [line for line in lines if line.startswith(long[-30].encode())][0]
        data = data.replace(target, target.replace(b"step", b"stop"))
    else:
        data = data[: len(data) * 2 // 3]
    path.write_bytes(data)
    env = env_for(home, tmp_path)
    done = listing_of(project, env)
    assert done.returncode == 0
    truth = checkpoints(repo, h16, from_objects=True)
    listed = [r for r in table_rows(done.stdout.decode())
              if r.split()[0].rstrip(".").isdigit()]
    assert [r.split()[1] for r in listed] == [cp.short for cp in truth]
    assert all("stop" not in r for r in listed)
    assert path.read_bytes().startswith(recordfile.HEADER + b"\n"), "rebuilt in this version"


@pytest.mark.parametrize("path", ["-C", "cwd"])
def test_damage_past_the_first_screen_ends_the_list_in_one_line(store, project, home,
                                                                tmp_path, long, path):
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    checkpoints(repo, h16)  # the records and their summary, then the damage
    victim = long[-150]  # row 150: past the first screen
    loose = store.layout.store / "objects" / victim[:2] / victim[2:]
    data = loose.read_bytes()
    loose.chmod(0o644)
    loose.write_bytes(data[: len(data) // 2])
    env = env_for(home, tmp_path)
    args = ["list", "-C", str(project)] if path == "-C" else ["list"]
    run = subprocess.run([REWIND, *args], cwd=project, env=env, capture_output=True,
                         timeout=120)
    err = run.stderr.decode()
    assert run.returncode == 3 and err.startswith("rewind: the history could not be "
                                                  "listed past this point"), err
    assert len(err.splitlines()) == 1
    assert 60 <= len(table_rows(run.stdout.decode())) < 150
    # The records that misled it are gone: the next listing reads the objects, which say
    # where the history breaks, the one way they always do.
    again = subprocess.run([REWIND, *args], cwd=project, env=env, capture_output=True,
                           timeout=120)
    assert again.returncode == 0 and "rewind check" in again.stderr.decode()
    assert f"{victim[:2]}/{victim[2:]}" in again.stderr.decode()
    assert len(table_rows(again.stdout.decode())) == 149, "numbered down to the break"


def test_a_writer_appending_meanwhile_never_misleads_a_reader(store, project, long):
    """Checkpoints taken (records appended, summaries written) while another thread lists:
    every listing is one whole chain, numbered from 1 without a gap."""
    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    checkpoints(repo, h16)
    done = threading.Event()
    failures: list[str] = []
    pages = 0

    def reader() -> None:
        nonlocal pages
        own = pygit2.Repository(str(store.layout.store))
        while not done.is_set():
            page = chain.page(own, h16)
            if page is None:
                checkpoints(own, h16)
                continue
            rows = list(page)
            pages += 1
            if [cp.number for cp in rows] != list(range(1, len(rows) + 1)) \
                    or any(a.parent_id != b.id for a, b in zip(rows, rows[1:], strict=False)):
                failures.append(f"{len(rows)} rows, not one chain")

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(40):
            (project / "new.txt").write_text(f"{n}\n")
            take(store, project, f"meanwhile {n}")
    finally:
        done.set()
        thread.join(60)
    assert pages > 0 and not failures, failures
    assert len(list(chain.page(repo, h16) or checkpoints(repo, h16))) == LONG + 41


def test_after_gc_the_records_are_read_whole_once_then_page_again(store, project, long):
    from rewindfs.store.maintenance.gc import gc

    repo = pygit2.Repository(str(store.layout.store))
    h16 = project_hash(project)
    checkpoints(repo, h16)
    assert chain.page(repo, h16) is not None
    assert gc(store.layout, immediate=True, wait=True).ran
    repo = pygit2.Repository(str(store.layout.store))
    truth = checkpoints(repo, h16, from_objects=True)
    # Loose records are checked one by one (their files are gone: each commit is read
    # again); packed ones under packs that changed make the chain be read whole.
    page = chain.page(repo, h16)
    found = list(page) if page is not None else checkpoints(repo, h16)
    assert [(cp.id, cp.number) for cp in found] == [(cp.id, cp.number) for cp in truth]
    checkpoints(repo, h16)  # the records, read whole: packed now, under these packs
    edit = project / "README.md"
    edit.write_text("changed\n")
    take(store, project, "one more")  # a new object for the next repack to pack
    assert gc(store.layout, immediate=True, wait=True).ran  # the packs change
    truth = checkpoints(repo, h16, from_objects=True)
    repo = pygit2.Repository(str(store.layout.store))
    assert chain.page(repo, h16) is None, "the packs changed: every record is checked"
    checkpoints(repo, h16)  # rewrites the records under the new packs, with a summary
    page = chain.page(repo, h16)
    assert page is not None
    assert [(cp.id, cp.number) for cp in page] == [(cp.id, cp.number) for cp in truth]
