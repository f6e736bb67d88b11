"""Reading ahead an agent's loose snapshot objects (store.foreign.objects.prefetch): the
kernel fetches a directory's objects at once, so the sizes and contents the mount reads
next come from the page cache; and it never fails, whatever is gone.

Proof that the disk was read, and by whom: the read_bytes of this process's threads
(/proc/self/task/*/io: not /proc/self/io, which also counts the children it reaps)
after the objects' pages were dropped from the page cache."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from agentdata import AgentData

from rewindfs.sources.agents import AGENTS
from rewindfs.sources.history import load
from rewindfs.store.foreign import ForeignObjects


def read_bytes() -> int:
    total = 0
    for io in Path("/proc/self/task").glob("*/io"):
        try:
            fields = dict(line.split(": ") for line in io.read_text().splitlines())
        except OSError:
            continue  # a thread that ended meanwhile (none of ours does)
        total += int(fields["read_bytes"])
    return total


def drop_pages(folder: Path) -> list[Path]:
    """The loose objects under `folder`, written to disk and their pages dropped."""
    os.sync()
    loose = [p for p in folder.glob("??/*") if p.is_file()]
    for path in loose:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return loose


def many_files(tmp_path: Path) -> AgentData:
    files = {f"src/f{i:03}.txt": f"file {i}\n".encode() * 50 for i in range(40)}
    data = AgentData(tmp_path, "opencode", files=files)
    data.session("many files")
    data.turn("edit one")
    data.step(lambda p: (p / "src" / "f000.txt").write_text("edited\n"))
    data.save()
    return data


def test_a_directory_is_read_ahead_at_once(tmp_path):
    if not Path(f"/proc/self/task/{threading.get_native_id()}/io").exists():
        pytest.skip("no /proc/self/io (kernel without task I/O accounting): nothing to measure")
    data = many_files(tmp_path)
    history = load(AGENTS["opencode"], data.project, data.data)
    objects = ForeignObjects(history.objects.folders)
    step = history.listed[0].step
    [src] = [e for e in objects.repo[step.start_tree] if e.name == "src"]
    loose = drop_pages(data.gitdir / "objects")
    assert len(loose) >= 40  # the snapshot's files are loose objects, as `git add` left them

    before = read_bytes()
    objects.prefetch(str(src.id))
    fetched = read_bytes() - before
    assert fetched >= 40 * 4096, fetched  # every file of the directory, one page at least

    # What the mount reads next (sizes, then contents) is served from the page cache.
    before = read_bytes()
    for entry in objects.repo[str(src.id)]:
        objects.blob(str(entry.id))
    assert read_bytes() - before == 0


def test_the_directories_below_are_read_ahead_in_the_background(tmp_path):
    if not Path(f"/proc/self/task/{threading.get_native_id()}/io").exists():
        pytest.skip("no /proc/self/io (kernel without task I/O accounting): nothing to measure")
    files = {f"src/deep/f{i:03}.txt": f"file {i}\n".encode() * 50 for i in range(40)}
    data = AgentData(tmp_path, "opencode", files=files)
    data.session("files deep down")
    data.turn("look")
    data.step()
    data.save()
    history = load(AGENTS["opencode"], data.project, data.data)
    objects = ForeignObjects(history.objects.folders)
    top = objects.repo[history.listed[0].step.start_tree]
    [src] = [e for e in top if e.name == "src"]
    [deep] = [e for e in objects.repo[str(src.id)] if e.name == "deep"]
    assert len(drop_pages(data.gitdir / "objects")) >= 40
    try:
        before = read_bytes()
        objects.prefetch(str(top.id))  # only the top is listed
        deadline = time.monotonic() + 60
        while read_bytes() - before < 40 * 4096 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert read_bytes() - before >= 40 * 4096  # deep/'s files too, two levels down

        # So listing deep/ and reading its files (as the mount does next) reads no disk.
        before = read_bytes()
        objects.prefetch(str(deep.id))
        for entry in objects.repo[str(deep.id)]:
            objects.blob(str(entry.id))
        assert read_bytes() - before == 0
    finally:
        objects.stop()


def test_prefetch_of_what_is_gone_is_harmless(tmp_path):
    data = many_files(tmp_path)
    history = load(AGENTS["opencode"], data.project, data.data)
    objects = ForeignObjects(history.objects.folders)
    tree = history.listed[0].step.start_tree
    [src] = [e for e in objects.repo[tree] if e.name == "src"]
    for path in drop_pages(data.gitdir / "objects")[::2]:
        if path.parent.name + path.name != str(src.id):
            path.unlink()  # half of its objects pruned (as a partial gc would)
    objects.prefetch(str(src.id))
    objects.prefetch("0" * 40)  # a tree that is gone
    objects.prefetch(str(next(e.id for e in objects.repo[str(src.id)])))  # not a tree
