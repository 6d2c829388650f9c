"""In-memory :class:`~docbinder.ports.extractor.ExtractionCache` (least recently used eviction)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from docbinder.adapters.cache_bounds import DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, check_bounds


class MemoryExtractionCache:
    """Payloads in a dict, at most ``max_entries`` of them and ``max_bytes`` bytes in total.

    A ``get`` hit makes an entry the most recently used; ``put`` evicts the
    least recently used entries until both bounds hold (a payload larger than
    ``max_bytes`` is not stored). Thread-safe.
    """

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        check_bounds(max_entries, max_bytes)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, sha256: str, version: str) -> bytes | None:
        """The payload for ``(sha256, version)``, or ``None``."""
        with self._lock:
            payload = self._entries.get((sha256, version))
            if payload is not None:
                self._entries.move_to_end((sha256, version))
            return payload

    def put(self, sha256: str, version: str, payload: bytes) -> None:
        """Store ``payload`` and evict down to the bounds."""
        if len(payload) > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop((sha256, version), None)
            if old is not None:
                self._bytes -= len(old)
            self._entries[(sha256, version)] = bytes(payload)
            self._bytes += len(payload)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _key, evicted = self._entries.popitem(last=False)
                self._bytes -= len(evicted)

    def hashes(self) -> set[str]:
        """The content hashes that have at least one entry."""
        with self._lock:
            return {sha for sha, _version in self._entries}

    def remove(self, sha256s: Iterable[str]) -> int:
        """Remove every entry of the given hashes; return how many entries went."""
        doomed = set(sha256s)
        with self._lock:
            keys = [key for key in self._entries if key[0] in doomed]
            for key in keys:
                self._bytes -= len(self._entries.pop(key))
            return len(keys)
