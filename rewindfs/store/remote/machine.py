"""This store's name on remotes: a random id made once, and the host it runs on.

The id, not the host name, names the machine's folder on a remote
(`refs/rewind/m/<id>/`): two sandboxes built from one image share a host name and
checkpoint the same paths, but each store makes its own id the first time it pushes.
It lives in the store (`rewind-machine-id`, 0600), so a store copied whole to another
machine carries its id along: the two then add to one history per project on the
remote, each push compare-and-swap, so neither overwrites the other's checkpoints.
"""

from __future__ import annotations

import os
import re
import secrets
import socket

from rewindfs.errors import StoreError
from rewindfs.store.objects import private
from rewindfs.store.objects.layout import Layout

_ID = re.compile(r"^[0-9a-f]{16}$")


def machine_id(layout: Layout) -> str:
    """The store's id, made (race-free: the first writer wins) when it has none."""
    path = layout.machine_id_file
    found = _read(path)
    if found is not None:
        return found
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    private.write_bytes(tmp, (secrets.token_hex(8) + "\n").encode())
    try:
        os.link(tmp, path)  # fails when another process made it first: theirs stands
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    found = _read(path)
    assert found is not None  # linked above, by us or by whoever won
    return found


def stored_id(layout: Layout) -> str | None:
    """The store's id if it has one (never makes one: for readers)."""
    try:
        return _read(layout.machine_id_file)
    except StoreError:
        return None


def _read(path) -> str | None:
    try:
        text = path.read_bytes().decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    if not _ID.match(text):
        raise StoreError(f"{path} is damaged (not 16 hex digits); remove it and push again "
                         "(this store then gets a new folder on each remote)")
    return text


def host_name() -> str:
    return socket.gethostname() or "unknown"
