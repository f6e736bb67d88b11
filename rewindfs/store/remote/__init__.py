"""Remotes: checkpoints that outlive the machine, pushed to and fetched from any git remote.

May import: objects, history.

    names      remote names, URLs (never with a credential), the refs on both sides
    machine    this store's id on remotes, and its host
    remotes    the remotes this store knows (rewind-remotes/), their last push and fetch
    gitremote  git's push and fetch, run on the store (the only place that talks to one)
    carry      carried copies: how a checkpoint travels (a prune-proof history)
    plan       what one push sends for one project
    pushing    `rewind push`: this machine's folder on the remote, atomic, leased
    fetching   `rewind fetch`: every folder of the remote, mirrored here
    catalog    the projects remotes hold, as mirrored here: keys, origins, names
    records    what a remote says about a project (path, host), validated before use
    autopush   pushing after checkpoints: batched, detached, never in the way
"""

# The TYPE_CHECKING imports name the face's exports for type checkers only.
# ruff: noqa: F401

from __future__ import annotations

from typing import TYPE_CHECKING

from rewindfs.faces import face

if TYPE_CHECKING:
    from rewindfs.store.remote import autopush, catalog, records, remotes
    from rewindfs.store.remote.fetching import FetchReport, fetch
    from rewindfs.store.remote.names import redact, validate_name
    from rewindfs.store.remote.pushing import PushReport, push

_HERE = "rewindfs.store.remote"
__all__, __getattr__, __dir__ = face(_HERE, {
    "FetchReport": f"{_HERE}.fetching",
    "fetch": f"{_HERE}.fetching",
    "PushReport": f"{_HERE}.pushing",
    "push": f"{_HERE}.pushing",
    "redact": f"{_HERE}.names",
    "validate_name": f"{_HERE}.names",
}, modules=("autopush", "catalog", "records", "remotes"))
