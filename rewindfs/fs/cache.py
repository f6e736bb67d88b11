"""A thread-safe LRU bounded by total weight (bytes for blobs, entries for listings).

Reading a whole checkpoint of 1 GiB must not keep 1 GiB in memory: the bound
holds whatever is read, and a value heavier than `largest` is returned to the
caller without being kept (one huge file must not flush every small one).
Concurrent loads of the same key wait for the first one instead of repeating it
(the kernel sends several reads of one file at once).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    def __init__(self, limit: int, weigh: Callable[[V], int], largest: int | None = None):
        self.limit = limit
        self.largest = limit if largest is None else largest
        self._weigh = weigh
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        self._loading: dict[K, threading.Lock] = {}

    @property
    def weight(self) -> int:
        """Total weight held now (always <= limit)."""
        return self._weight

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: K) -> bool:
        return key in self._items

    def get(self, key: K) -> V | None:
        """The cached value (now the most recently used), or None."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def get_or_load(self, key: K, load: Callable[[K], V]) -> V:
        """The cached value, or load(key) (outside the cache's lock, so loads of
        different keys run in parallel; a second load of the same key waits)."""
        hit = self.get(key)
        if hit is not None:
            return hit
        with self._lock:
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:
            try:
                hit = self.get(key)
                if hit is not None:
                    return hit
                value = load(key)
                self.put(key, value)
                return value
            finally:
                with self._lock:
                    if self._loading.get(key) is gate:
                        del self._loading[key]

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value)
        if weight > self.largest:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._items[key] = (value, weight)
            self._weight += weight
            while self._weight > self.limit and self._items:
                _, (_, dropped) = self._items.popitem(last=False)
                self._weight -= dropped
