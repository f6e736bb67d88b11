"""A Ctrl-C raised the moment a descriptor's close returns (CPython looks for a pending
signal right after each call) must never make a cleanup close that number again: the
second close fails with EBADF, which then replaces the interrupt (CI saw `rewind diff`
end with `rewind: Bad file descriptor`, exit 3, instead of `rewind: interrupted`), or,
once the number is reused, closes another file of the process.

Each test interrupts right after a chosen close of the real code (the interrupt is
raised by a wrapper around os.close once the close is done, where the signal's handler
would raise it) and proves that close happened before it checks the outcome.
"""

from __future__ import annotations

import os

import pytest

from rewindfs.store.history import shallow
from rewindfs.store.history.records import recordfile, recordtail
from rewindfs.store.objects import private


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


class InterruptAfterClose:
    """os.close, raising KeyboardInterrupt once the `nth` close (1-based) is done."""

    def __init__(self, nth: int):
        self.nth, self.calls, self.fired = nth, 0, False
        self.real = os.close

    def __call__(self, fd: int) -> None:
        self.real(fd)
        self.calls += 1
        if self.calls == self.nth:
            self.fired = True
            raise KeyboardInterrupt


def test_open_dir_interrupted_after_any_close(tmp_path, monkeypatch):
    """open_dir walks down one directory at a time, closing the one above: a Ctrl-C after
    any of those closes is a KeyboardInterrupt with every descriptor let go of."""
    root = tmp_path / "root"
    deep = root / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    monkeypatch.setattr(private, "_roots", set())
    private.trust(root)
    counting = InterruptAfterClose(0)
    with monkeypatch.context() as patch:
        patch.setattr(os, "close", counting)
        os.close(private.open_dir(deep))
    closes = counting.calls
    assert closes >= 4, closes  # one per level walked down, and the caller's

    for nth in range(1, closes):  # (the last one is this test's own)
        before = open_fds()
        interrupt = InterruptAfterClose(nth)
        with monkeypatch.context() as patch:
            patch.setattr(os, "close", interrupt)
            with pytest.raises(KeyboardInterrupt):
                private.open_dir(deep)
        assert interrupt.fired, nth
        assert open_fds() == before, nth


def test_a_records_tail_closed_twice_closes_once(tmp_path, monkeypatch):
    """A Tail whose close was interrupted must not close its old number again (from
    __del__, or a second close) once another file has been given that number."""
    path = tmp_path / "caches" / "x.history"
    path.parent.mkdir()
    path.write_bytes(recordfile.HEADER + b"\n")
    tail = recordtail.Tail(path)
    assert tail.ok and tail._fd >= 0
    old = tail._fd
    interrupt = InterruptAfterClose(1)
    with monkeypatch.context() as patch:
        patch.setattr(os, "close", interrupt)
        with pytest.raises(KeyboardInterrupt):
            tail.close()
    assert interrupt.fired
    other = os.open(tmp_path / "other", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        assert other == old  # the lowest free number: the scenario is set up
        tail.close()
        del tail
        os.fstat(other)  # still open: the tail did not close it
    finally:
        os.close(other)


def test_a_committed_lockfile_is_not_closed_again_on_exit(tmp_path, monkeypatch):
    """A Ctrl-C as the shallow file's lock is closed on commit: leaving the block must
    not close the number again."""
    path = tmp_path / "shallow"
    interrupt = InterruptAfterClose(1)
    with pytest.raises(KeyboardInterrupt):
        with shallow._GitLockfile(path) as lock:
            with monkeypatch.context() as patch:
                patch.setattr(os, "close", interrupt)
                lock.commit("0" * 40 + "\n")
    assert interrupt.fired
    assert lock.fd == -1
