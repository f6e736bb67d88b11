"""The pyfuse3 adapter: translates kernel requests into calls on the model, and nothing more.

Rules it keeps:
* Work that may touch the store (reading big blobs and trees, re-reading the
  checkpoint lists) runs in a worker thread, so other requests are served
  between its libgit2 calls, and while git reads a big blob for it (pygit2
  would hold the GIL for a whole object read; see store.catfile); answers
  already in memory, small blobs and link targets (cheaper to read than a
  thread hop) are given on the trio thread.
* Each request costs a kernel round trip (tens of microseconds in pyfuse3), so
  none is asked for needlessly: `flush` is left unimplemented (the kernel then
  stops sending it), open files keep their page cache, and a small file's bytes
  go to the page cache with its open (no read requests follow).
* Inside a checkpoint nothing ever changes, so entries and attributes are
  cached by the kernel for a day; the root and project directories change, so
  their entries and attributes expire after a second.
* Only `FUSEError` may leave a handler (anything else would end the main
  loop): store errors become ENOENT (gone) or EIO (broken), logged.
* Every write request is EROFS.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import pyfuse3
import trio

from rewindfs.errors import NotFound
from rewindfs.fs.cache import LruCache
from rewindfs.fs.context import LISTING_CACHE_ENTRIES
from rewindfs.fs.model import Model
from rewindfs.fs.node import Attributes, Directory, File, Node, Symlink
from rewindfs.fs.table import InodeTable

log = logging.getLogger(__name__)
T = TypeVar("T")

IMMUTABLE_TIMEOUT = 24 * 3600.0
VOLATILE_TIMEOUT = 1.0
BLOCK_SIZE = 4096
INLINE_READ_LIMIT = 128 * 1024  # blobs up to this size are read on the trio thread
MAX_REMEMBERED_PUSHES = 200_000
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND | os.O_CREAT


@dataclass
class _OpenFile:
    node: File
    data: bytes | None = None  # the whole blob while open (big blobs are not cached)
    loading: trio.Lock = field(default_factory=trio.Lock)


# One directory entry ready for readdirplus: name, node, the kernel's attributes.
Listing = list[tuple[bytes, Node, pyfuse3.EntryAttributes]]


@dataclass
class _OpenDir:
    node: Directory
    listing: Listing


class RewindOperations(pyfuse3.Operations):
    supports_dot_lookup = False  # not exported over NFS; the kernel then never asks for ".."

    def __init__(self, model: Model):
        super().__init__()
        self.model = model
        self.table = InodeTable(model.root)
        self._files: dict[int, _OpenFile] = {}
        self._dirs: dict[int, _OpenDir] = {}
        self._next_handle = 1
        self._pushed: set[int] = set()
        # Listings of directories inside checkpoints never change: prepared once, they
        # make a warm opendir a dictionary lookup (bounded by entries, like the model's).
        self._listings: LruCache[int, Listing] = LruCache(LISTING_CACHE_ENTRIES,
                                                          lambda listing: max(1, len(listing)))

    # -- helpers -------------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: object, offload: bool = True) -> T:
        """fn(*args) with store errors turned into errnos (in a worker thread if `offload`)."""
        try:
            if offload:
                return await trio.to_thread.run_sync(fn, *args)
            return fn(*args)
        except pyfuse3.FUSEError:
            raise
        except NotFound as exc:
            log.debug("not found: %s", exc)
            raise pyfuse3.FUSEError(errno.ENOENT) from None
        except OSError as exc:
            log.warning("%s failed: %s", getattr(fn, "__name__", fn), exc)
            raise pyfuse3.FUSEError(exc.errno or errno.EIO) from None
        except Exception:
            log.exception("%s failed", getattr(fn, "__name__", fn))
            raise pyfuse3.FUSEError(errno.EIO) from None

    def _node(self, inode: int) -> Node:
        node = self.table.get(inode)
        if node is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return node

    def _handle(self) -> int:
        self._next_handle += 1
        return self._next_handle

    @staticmethod
    def _entry(node: Node, attrs: Attributes, entry_timeout: float) -> pyfuse3.EntryAttributes:
        entry = pyfuse3.EntryAttributes()
        entry.st_ino = attrs.inode
        entry.generation = 0
        entry.entry_timeout = entry_timeout
        entry.attr_timeout = IMMUTABLE_TIMEOUT if node.immutable else VOLATILE_TIMEOUT
        entry.st_mode = attrs.mode
        # nlink 1 for every node: directories then read as "count unknown" (no find
        # leaf optimisation), and files shared between checkpoints do not look
        # like hard links to cp -a, tar or rsync -H.
        entry.st_nlink = 1
        entry.st_uid = attrs.uid
        entry.st_gid = attrs.gid
        entry.st_rdev = 0
        entry.st_size = attrs.size
        entry.st_blksize = BLOCK_SIZE
        entry.st_blocks = (attrs.size + 511) // 512
        entry.st_atime_ns = entry.st_ctime_ns = entry.st_mtime_ns = attrs.mtime_ns
        return entry

    @staticmethod
    def _entry_timeout(parent: Directory) -> float:
        return IMMUTABLE_TIMEOUT if parent.stable_entries else VOLATILE_TIMEOUT

    # -- names and attributes ----------------------------------------------------------

    async def lookup(self, parent_inode: int, name: bytes, ctx=None) -> pyfuse3.EntryAttributes:
        parent = self._node(parent_inode)
        if not isinstance(parent, Directory):
            raise pyfuse3.FUSEError(errno.ENOTDIR)

        def find() -> tuple[Node, Attributes] | None:
            child = parent.lookup(name)
            return (child, child.attributes()) if child is not None else None

        found = await self._call(find, offload=not parent.entries_ready())
        if found is None:
            if parent.stable_entries:  # cache "no such name" as long as the tree lives
                negative = pyfuse3.EntryAttributes()
                negative.st_ino = 0
                negative.entry_timeout = IMMUTABLE_TIMEOUT
                return negative
            raise pyfuse3.FUSEError(errno.ENOENT)
        child, attrs = found
        self.table.remember(child)
        return self._entry(child, attrs, self._entry_timeout(parent))

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            self.table.forget(inode, count)

    async def getattr(self, inode: int, ctx=None) -> pyfuse3.EntryAttributes:
        node = self._node(inode)
        attrs = await self._call(node.attributes, offload=not node.immutable)
        return self._entry(node, attrs, 0)

    async def readlink(self, inode: int, ctx=None) -> bytes:
        node = self._node(inode)
        if not isinstance(node, Symlink):
            raise pyfuse3.FUSEError(errno.EINVAL)
        # Targets are in memory or tiny blobs: cheaper to read than a thread hop, and
        # every path walked through `1` or `latest` asks for one (the kernel does not
        # cache symlink targets unless the filesystem asks, which pyfuse3 cannot).
        return await self._call(node.target, offload=False)

    # -- directories -------------------------------------------------------------------

    async def opendir(self, inode: int, ctx=None) -> int:
        node = self._node(inode)
        if not isinstance(node, Directory):
            raise pyfuse3.FUSEError(errno.ENOTDIR)

        timeout = self._entry_timeout(node)

        def snapshot(_: object = None) -> Listing:
            return [(name, child, self._entry(child, child.attributes(), timeout))
                    for name, child in node.entries()]

        # A snapshot per open: entries added or removed later never shift offsets.
        # Inside a checkpoint nothing changes, so that snapshot is made once.
        keep = node.stable_entries and node.immutable
        listing = self._listings.get(inode) if keep else None
        if listing is None:
            load = partial(self._listings.get_or_load, inode, snapshot) if keep else snapshot
            listing = await self._call(load, offload=not (node.stable_entries
                                                          and node.entries_ready()))
        handle = self._handle()
        self._dirs[handle] = _OpenDir(node, listing)
        return handle

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        opened = self._dirs.get(fh)
        if opened is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        listing = opened.listing
        for index in range(start_id, len(listing)):
            name, child, entry = listing[index]
            if not pyfuse3.readdir_reply(token, name, entry, index + 1):
                return
            self.table.remember(child)

    async def releasedir(self, fh: int) -> None:
        self._dirs.pop(fh, None)

    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        return None

    # -- files -------------------------------------------------------------------------

    async def open(self, inode: int, flags: int, ctx=None) -> pyfuse3.FileInfo:
        node = self._node(inode)
        if flags & WRITE_FLAGS:
            raise pyfuse3.FUSEError(errno.EROFS)
        if not isinstance(node, File):
            raise pyfuse3.FUSEError(errno.EISDIR if stat.S_ISDIR(node.attributes().mode)
                                    else errno.EINVAL)
        handle = self._handle()
        opened = self._files[handle] = _OpenFile(node)
        size = node.attributes().size
        if 0 < size <= INLINE_READ_LIMIT and inode not in self._pushed:
            opened.data = await self._call(node.data, offload=False)
            self._push_to_page_cache(inode, opened.data)
        # Blobs never change: keep the page cache across opens.
        return pyfuse3.FileInfo(fh=handle, keep_cache=True)

    def _push_to_page_cache(self, inode: int, data: bytes) -> None:
        """Hand a small file's bytes to the kernel with the open: its reads then need no
        round trip to us. Remembered so a warm open does not push again (if the kernel
        dropped the pages meanwhile, it simply asks with a read)."""
        if len(self._pushed) >= MAX_REMEMBERED_PUSHES:
            self._pushed.clear()
        try:
            pyfuse3.notify_store(inode, 0, data)
        except OSError as exc:
            log.debug("notify_store of inode %d failed: %s", inode, exc)
            return
        self._pushed.add(inode)

    async def read(self, fh: int, off: int, size: int) -> bytes:
        opened = self._files.get(fh)
        if opened is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        if opened.data is None:
            async with opened.loading:  # the kernel may send several reads of one file at once
                if opened.data is None:
                    small = opened.node.attributes().size <= INLINE_READ_LIMIT
                    opened.data = await self._call(opened.node.data, offload=not small)
        return opened.data[off:off + size]

    async def release(self, fh: int) -> None:
        self._files.pop(fh, None)

    async def fsync(self, fh: int, datasync: bool) -> None:
        return None

    # -- metadata ------------------------------------------------------------------------

    async def getxattr(self, inode: int, name: bytes, ctx=None) -> bytes:
        value = self._node(inode).xattrs().get(name)
        if value is None:
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR)
        return value

    async def listxattr(self, inode: int, ctx=None) -> list[bytes]:
        return list(self._node(inode).xattrs())

    async def statfs(self, ctx=None) -> pyfuse3.StatvfsData:
        data = pyfuse3.StatvfsData()
        data.f_bsize = data.f_frsize = BLOCK_SIZE
        data.f_blocks = data.f_bfree = data.f_bavail = 0
        data.f_files = len(self.table) + 1
        data.f_ffree = data.f_favail = 0
        data.f_namemax = 255
        return data

    # -- everything that would write: the mount is read-only ----------------------------

    async def _refuse_write(self, *_args: object) -> None:
        raise pyfuse3.FUSEError(errno.EROFS)

    setattr = mknod = mkdir = unlink = rmdir = symlink = rename = link = _refuse_write
    write = create = setxattr = removexattr = _refuse_write
