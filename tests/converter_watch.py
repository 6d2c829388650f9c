"""How many converter processes were alive at once: shared by the bounded-read tests and benchmark."""

from __future__ import annotations

import multiprocessing
import threading
import time


class ConverterWatch:
    """Samples this process's live child processes every 10 ms from a thread, until the block ends.

    ``most`` is the largest number seen (the converter processes of docbinder's
    extractor are the only children of a test or benchmark process).
    """

    def __init__(self) -> None:
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.most = max(self.most, len(multiprocessing.active_children()))
            time.sleep(0.01)

    def __enter__(self) -> ConverterWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
