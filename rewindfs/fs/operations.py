"""The pyfuse3 adapter: answers kernel requests (lookup, getattr, readdir, read) from the model.

Two modes (capabilities.py; the one in use is logged at mount time and shown by
`rewind status`):

* kernel cache (rewindfs's patched pyfuse3, patches/pyfuse3/): `open` and `opendir`
  answer ENOSYS, so the kernel stops sending open/release/opendir/releasedir, keeps
  file pages and caches directory listings until told otherwise; symlink targets
  are cached too. `read` and `readdir` then get the inode instead of a handle.
  Inside a checkpoint nothing ever changes, so a warm pass sends no request at
  all; what does change (the root and project directories, the `1`/`latest`/label
  links) is invalidated by watch.Watcher.
* stock pyfuse3 (or `rewind mount --no-kernel-cache`): every open and listing
  comes to the daemon, as pyfuse3 3.5 requires.

Rules it keeps in both:
* Work that may touch the store (reading big blobs and trees, re-reading the
  checkpoint lists) runs in a worker thread, so other requests are served
  between its libgit2 calls, and while git reads a big blob for it (pygit2
  would hold the GIL for a whole object read; see store.objects.catfile); answers
  already in memory, small blobs and link targets (cheaper to read than a
  thread hop) are given on the trio thread.
* No open file holds its content: reads go through the mount's byte-bounded
  caches (fs.blobs), so memory stays bounded whatever is opened.
* Inside a checkpoint entries and attributes are cached by the kernel for a day;
  the root and project directories change, so their entries and attributes
  expire after a second (and are invalidated when they change).
* Only `FUSEError` may leave a handler (anything else would end the main
  loop): every request handler goes through one wrapper (fs.answers), which
  turns store errors into ENOENT (gone) or EIO (damaged) and logs each once.
* Every write request is EROFS.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import pyfuse3
import trio

from rewindfs.fs import capabilities
from rewindfs.fs.answers import guard_handlers
from rewindfs.fs.blobs import PushJob
from rewindfs.fs.cache import LruCache
from rewindfs.fs.model import Model
from rewindfs.fs.nodes.context import PREPARED_ENTRIES
from rewindfs.fs.nodes.file import INLINE_READ_LIMIT
from rewindfs.fs.nodes.node import Attributes, Directory, File, Node, Symlink
from rewindfs.fs.table import InodeTable

log = logging.getLogger(__name__)
T = TypeVar("T")

IMMUTABLE_TIMEOUT = 24 * 3600.0
VOLATILE_TIMEOUT = 1.0
BLOCK_SIZE = 4096
MAX_REMEMBERED_PUSHES = 200_000
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND | os.O_CREAT


@dataclass
class _OpenFile:
    node: File


# One directory entry ready for readdirplus: name, node, the kernel's attributes.
Listing = list[tuple[bytes, Node, pyfuse3.EntryAttributes]]


@dataclass
class _OpenDir:
    node: Directory
    listing: Listing


@guard_handlers
class RewindOperations(pyfuse3.Operations):
    supports_dot_lookup = False  # not exported over NFS; the kernel then never asks for ".."

    def __init__(self, model: Model, *, kernel_cache: bool = True):
        super().__init__()
        self.model = model
        # Opt in to what the patched pyfuse3 offers (stock pyfuse3 has no such attributes).
        self.caching = kernel_cache and capabilities.patched()
        if self.caching:
            self.inode_in_read_and_readdir = True
            self.enable_cache_symlinks = True
        self.no_open = self.no_opendir = False
        self.failures = model.context.failures  # what the request wrapper logs (fs.answers)
        self._volatile: dict[int, Listing] = {}  # root/project listing being read (no opendir)
        self.mode = self.describe_mode()
        self.table = InodeTable(model.root)
        self._files: dict[int, _OpenFile] = {}
        self._dirs: dict[int, _OpenDir] = {}
        self._next_handle = 1
        self._pushed: set[int] = set()
        self._listing_pushes: dict[int, PushJob] = {}  # directory inode -> its pushes
        # Listings of directories inside checkpoints never change: prepared once, they
        # make a warm opendir a dictionary lookup (bounded by entries, like the model's).
        self._listings: LruCache[int, Listing] = LruCache(PREPARED_ENTRIES,
                                                          lambda listing: max(1, len(listing)))

    def init(self) -> None:
        """Called by pyfuse3 once the kernel said what it supports (patched build)."""
        if self.caching:
            self.no_open = bool(getattr(self, "kernel_no_open", False))
            self.no_opendir = bool(getattr(self, "kernel_no_opendir", False))
        self.mode = self.describe_mode()
        self.model.context.mount_mode = self.mode
        if self.no_open:  # files read ahead go straight to the page cache (blobs.BlobReader)
            self.model.context.blobs.on_prefetched = self._push_to_page_cache
        log.info("rewindfs: %s", self.mode)

    def describe_mode(self) -> str:
        version = capabilities.pyfuse3_version()
        if not self.caching:
            why = "disabled by --no-kernel-cache" if capabilities.patched() else "stock pyfuse3"
            return (f"{capabilities.STOCK} ({why} {version}: every open and listing is "
                    "served by the daemon)")
        parts = [name for name, on in (("no-open", self.no_open),
                                       ("no-opendir", self.no_opendir),
                                       ("cached symlinks",
                                        bool(getattr(self, "kernel_cache_symlinks", False))))
                 if on]
        return f"{capabilities.KERNEL_CACHE} (pyfuse3 {version}: {', '.join(parts) or 'pending'})"

    # -- helpers -------------------------------------------------------------------

    @staticmethod
    async def _call(fn: Callable[..., T], *args: object, offload: bool = True) -> T:
        """fn(*args), in a worker thread if `offload` (its errors: see fs.answers)."""
        if offload:
            return await trio.to_thread.run_sync(fn, *args)
        return fn(*args)

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

    async def opendir(self, inode: int, ctx=None) -> int | pyfuse3.FileInfo:
        node = self._node(inode)
        if not isinstance(node, Directory):
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        if self.no_opendir:
            # The kernel stops sending opendir/releasedir and caches every listing
            # (watch.Watcher invalidates the ones that change).
            raise pyfuse3.FUSEError(errno.ENOSYS)
        listing = await self._listing(node)
        handle = self._handle()
        self._dirs[handle] = _OpenDir(node, listing)
        if self.caching:  # a kernel without no-opendir: ask it to cache what never changes
            cacheable = node.stable_entries and node.immutable
            return pyfuse3.FileInfo(fh=handle, keep_cache=cacheable, cache_readdir=cacheable)
        return handle

    async def _listing(self, node: Directory) -> Listing:
        """A snapshot of the entries: later changes never shift the offsets of a reader
        that is halfway through. Inside a checkpoint nothing changes, so that snapshot
        is made once."""
        timeout = self._entry_timeout(node)

        def snapshot(_: object = None) -> Listing:
            return [(name, child, self._entry(child, child.attributes(), timeout))
                    for name, child in node.entries()]

        keep = node.stable_entries and node.immutable
        listing = self._listings.get(node.inode) if keep else None
        if listing is None:
            load = partial(self._listings.get_or_load, node.inode, snapshot) if keep else snapshot
            listing = await self._call(load, offload=not node.entries_ready())
        return listing

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken,
                      inode: int | None = None) -> None:
        opened = self._dirs.get(fh) if fh else None
        if opened is not None:
            listing = opened.listing
        elif inode is not None:  # no opendir: the kernel names the directory itself
            node = self._node(inode)
            if not isinstance(node, Directory):
                raise pyfuse3.FUSEError(errno.ENOTDIR)
            if node.stable_entries and node.immutable:
                listing = await self._listing(node)
            else:  # a changing directory: one snapshot from offset 0 to the end
                listing = self._volatile.get(inode) if start_id else None
                if listing is None:
                    listing = self._volatile[inode] = await self._listing(node)
        else:
            raise pyfuse3.FUSEError(errno.EBADF)
        for index in range(start_id, len(listing)):
            name, child, entry = listing[index]
            if not pyfuse3.readdir_reply(token, name, entry, index + 1):
                return
            self.table.remember(child)
        node_listed = opened.node if opened is not None else self._node(inode or 0)
        if not isinstance(node_listed, Directory):
            return
        if start_id < len(listing):
            # The last entries are on their way to the kernel: read ahead the files it
            # will be asked for next, and push those read already into its page cache
            # once this reply is sent (a push names an inode the kernel must know).
            node_listed.prefetch()
            files = node_listed.listed() if self.no_open else []
            if files:
                if len(self._listing_pushes) >= MAX_REMEMBERED_PUSHES:
                    self._listing_pushes.clear()
                job = self._listing_pushes[node_listed.inode] = PushJob(files)
                trio.lowlevel.current_trio_token().run_sync_soon(
                    node_listed.context.blobs.push_later, job)
        elif (job := self._listing_pushes.pop(node_listed.inode, None)) is not None:
            # The end of the listing: the reader took in every entry (so the kernel
            # knows their inodes) and reads none of its files before this reply. Let
            # the pushes finish first, so those reads never reach us.
            job.linked.set()
            pushed = trio.Event()
            token = trio.lowlevel.current_trio_token()
            if not job.when_done(lambda: token.run_sync_soon(pushed.set)):
                await pushed.wait()

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
        if self.no_open:
            # The kernel stops sending open/release and keeps every file's pages.
            raise pyfuse3.FUSEError(errno.ENOSYS)
        handle = self._handle()
        self._files[handle] = _OpenFile(node)
        size = node.attributes().size
        if 0 < size <= INLINE_READ_LIMIT and inode not in self._pushed:
            data = await self._call(node.data, offload=not node.cheap())
            self._push_to_page_cache(inode, data)
        # Blobs never change: keep the page cache across opens.
        return pyfuse3.FileInfo(fh=handle, keep_cache=True)

    def _push_to_page_cache(self, inode: int, data: bytes) -> bool:
        """Hand a small file's bytes to the kernel (with the open in stock mode, as they
        are read ahead in kernel cache mode): its reads then need no round trip to us.
        Remembered so a warm open does not push again (if the kernel dropped the pages
        meanwhile, it simply asks with a read). False when the kernel does not know the
        inode (yet: a listing's entries become inodes only once the process that listed
        them wakes up), so the read-ahead's pusher tries again (blobs.BlobReader)."""
        if inode in self._pushed:
            return True
        if len(self._pushed) >= MAX_REMEMBERED_PUSHES:
            self._pushed.clear()
        try:
            pyfuse3.notify_store(inode, 0, data)
        except OSError as exc:
            log.debug("notify_store of inode %d failed: %s", inode, exc)
            return exc.errno != errno.ENOENT
        self._pushed.add(inode)
        return True

    async def read(self, fh: int, off: int, size: int, inode: int | None = None) -> bytes:
        opened = self._files.get(fh) if fh else None
        if opened is not None:
            node: Node = opened.node
        elif inode is not None:  # no open: the kernel names the file itself
            node = self._node(inode)
        else:
            raise pyfuse3.FUSEError(errno.EBADF)
        if not isinstance(node, File):
            raise pyfuse3.FUSEError(errno.EISDIR)
        return await self._call(node.read, off, size, offload=not node.cheap())

    async def release(self, fh: int) -> None:
        self._files.pop(fh, None)

    async def fsync(self, fh: int, datasync: bool) -> None:
        return None

    # -- metadata ------------------------------------------------------------------------

    async def getxattr(self, inode: int, name: bytes, ctx=None) -> bytes:
        # By name: `ls -l` asks every entry for security.selinux and the POSIX ACLs,
        # which must not depend on the checkpoint's notes being readable.
        node = self._node(inode)
        value = await self._call(node.xattr, name, offload=not node.xattrs_ready(name))
        if value is None:
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR)
        return value

    async def listxattr(self, inode: int, ctx=None) -> list[bytes]:
        node = self._node(inode)
        return list(await self._call(node.xattrs, offload=not node.xattrs_ready()))

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
