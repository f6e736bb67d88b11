"""A daemon thread calling `tick()` every `interval` seconds until `stop()` (fs.watch's
watcher and fs.trim's trimmer: work on the kernel's caches that must never run on the
trio thread). A tick that fails is handed to `failed` and tried again next interval."""

from __future__ import annotations

import threading


class Periodic:
    name = "rewindfs-periodic"  # the thread's name

    def __init__(self, interval: float):
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - never fatal: tried again next interval
                self.failed(exc)

    def tick(self) -> object:
        raise NotImplementedError

    def failed(self, exc: Exception) -> None:
        raise NotImplementedError
