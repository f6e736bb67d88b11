"""Which pyfuse3 this is: rewindfs's patched build (kernel caching possible) or stock.

The patch (patches/pyfuse3/) adds opt-in attributes to `pyfuse3.Operations` and
`FileInfo.cache_readdir`; a stock pyfuse3 has neither, and the mount then serves
every open and listing itself, as before the patch.
"""

from __future__ import annotations

from importlib import metadata

import pyfuse3

KERNEL_CACHE = "kernel cache"
STOCK = "stock"


def patched() -> bool:
    """True when pyfuse3 has the opt-in kernel-caching attributes."""
    if not hasattr(pyfuse3.Operations, "inode_in_read_and_readdir"):
        return False
    try:
        pyfuse3.FileInfo(cache_readdir=True)
    except TypeError:
        return False
    return True


def pyfuse3_version() -> str:
    try:
        return metadata.version("pyfuse3")
    except metadata.PackageNotFoundError:
        return "unknown"
