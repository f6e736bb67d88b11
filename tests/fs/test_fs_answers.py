"""The one wrapper every FUSE request goes through (fs.answers), called directly (no
kernel): no exception but FUSEError leaves a handler, whatever the request; damage is
EIO, what is gone ENOENT, and each failure is logged once. tests/damage/test_damage_mount
does the same through a real mount, for every damage kind."""

from __future__ import annotations

import errno
import logging

import pyfuse3
import pytest
import trio

from rewindfs.fs import answers
from rewindfs.fs.model import Model
from rewindfs.fs.nodes.checkpoint import CheckpointDir
from rewindfs.fs.operations import RewindOperations
from rewindfs.store import project_hash, take


def test_every_request_pyfuse3_can_send_is_guarded():
    handled = answers.requests(RewindOperations)
    assert {"lookup", "getattr", "readdir", "readlink", "read", "open", "opendir",
            "getxattr", "listxattr", "statfs", "forget", "release", "releasedir",
            "access", "flush", "write", "setxattr"} <= set(handled)
    assert all(getattr(getattr(RewindOperations, name), answers.GUARDED, False)
               for name in handled), [n for n in handled if not getattr(
                   getattr(RewindOperations, n), answers.GUARDED, False)]


@pytest.fixture
def damaged_notes(store, project, layout, store_dir):
    """A project whose notes ref points at a blob (the mount once died of it)."""
    take(store, project, "first")
    blob = str(store.repo.create_blob(b"not a notes commit\n"))
    (store_dir / "refs" / "notes" / "rewind").mkdir(parents=True, exist_ok=True)
    (store_dir / "refs" / "notes" / "rewind" / project_hash(project)).write_text(blob + "\n")
    return Model(layout)


def checkpoint_dir(model: Model) -> CheckpointDir:
    return next(node for _, node in model.resolve("proj").entries()
                if isinstance(node, CheckpointDir))


def ask(coroutine_fn, *args):
    async def run():
        return await coroutine_fn(*args)
    return trio.run(run)


def test_a_damaged_note_is_eio_for_the_note_only_and_logged_once(damaged_notes, caplog):
    ops = RewindOperations(damaged_notes)
    node = checkpoint_dir(damaged_notes)
    ops.table.remember(node)
    caplog.set_level(logging.WARNING)
    for name in (b"security.selinux", b"system.posix_acl_access"):  # what `ls -l` asks
        with pytest.raises(pyfuse3.FUSEError) as failed:
            ask(ops.getxattr, node.inode, name)
        assert failed.value.errno == pyfuse3.ENOATTR
    assert ask(ops.getxattr, node.inode, b"user.rewind.reason") == b"first"
    for _ in range(3):
        with pytest.raises(pyfuse3.FUSEError) as failed:
            ask(ops.listxattr, node.inode)
        assert failed.value.errno == errno.EIO
        with pytest.raises(pyfuse3.FUSEError) as failed:
            ask(ops.getxattr, node.inode, b"user.rewind.actions")
        assert failed.value.errno == errno.EIO
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(logged) == 1 and "refs/notes/rewind/" in logged[0], logged
    assert ask(ops.getattr, node.inode).st_ino == node.inode  # the same mount serves on


def test_an_unexpected_error_is_eio_not_the_end_of_the_mount(store, project, layout,
                                                             caplog):
    take(store, project, "first")
    model = Model(layout)
    ops = RewindOperations(model)
    node = checkpoint_dir(model)
    ops.table.remember(node)

    def broken() -> None:  # a bug in a node, as a request meets it
        raise RuntimeError("a bug")

    node.attributes = broken
    with pytest.raises(pyfuse3.FUSEError) as failed:
        ask(ops.getattr, node.inode)
    assert failed.value.errno == errno.EIO
    assert "RuntimeError: a bug" in caplog.text
    with pytest.raises(pyfuse3.FUSEError) as failed:
        ask(ops.getattr, 987654321)  # an inode the kernel never had
    assert failed.value.errno == errno.ENOENT
