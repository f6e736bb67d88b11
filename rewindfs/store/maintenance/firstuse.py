"""What happens when a store is opened for writing: the one-time chores of a base.

Store.ensure calls `on_store_ready` under the store lock, so concurrent first
uses run it one at a time. It must stay cheap (one listing of the base) and
never fail a checkpoint.
"""

from __future__ import annotations

import logging

from rewindfs.store.layout import Layout
from rewindfs.store.maintenance import legacy, marker

log = logging.getLogger(__name__)


def on_store_ready(layout: Layout, created: bool) -> None:
    """Archive Hermes v1 repositories; a store created just now counts as swept now.

    A new store has nothing stale, orphaned or over the cap, so its first
    automatic sweep can wait a full interval instead of running at once.
    """
    try:
        legacy.migrate(layout)
        if created and marker.last_run(layout) is None:
            marker.mark(layout)
    except OSError as exc:
        log.warning("checkpoint base upkeep skipped: %s", exc)
