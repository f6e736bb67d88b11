"""What happens when a store is opened for writing: the one-time chores of a base.

Store.ensure calls `on_store_ready` under the store lock, so concurrent first
uses run it one at a time. It must stay cheap and never fail a checkpoint.
"""

from __future__ import annotations

from rewindfs.lazylog import logger
from rewindfs.store.objects import marker, shadowrepos
from rewindfs.store.objects.layout import Layout

log = logger(__name__)


def on_store_ready(layout: Layout, created: bool) -> None:
    """When the store was created just now: archive Hermes's pre-v2 repositories (as
    Hermes does when it creates the store; later ones are prune's), and count the
    new store as swept now.

    A new store has nothing stale, orphaned or over the cap, so its first
    automatic sweep can wait a full interval instead of running at once.
    """
    if not created:
        return
    try:
        shadowrepos.migrate(layout)
        if marker.last_run(layout) is None:
            marker.mark(layout)
    except OSError as exc:
        log.warning("checkpoint base upkeep skipped: %s", exc)
