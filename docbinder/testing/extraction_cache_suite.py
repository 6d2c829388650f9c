"""The ExtractionCache contract, run on memory, SQLite, PostgreSQL and MariaDB.

A concrete test class provides ``make_cache(max_entries=..., max_bytes=...)``: a
factory of fresh, empty caches with those bounds (entries; bytes), the
defaults when a bound is not given::

    class TestMyCache(ExtractionCacheContract):
        @pytest.fixture
        def make_cache(self):
            return MyExtractionCache

Needs ``pytest`` (``pip install -e '.[testing]'`` in a clone).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from docbinder.ports.extractor import ExtractionCache

A = "a" * 64
B = "b" * 64
C = "c" * 64
V1 = "docbinder-extract/2;pypdf=7;limits=1"
V2 = "docbinder-extract/3;pypdf=7;limits=1"
MakeCache = Callable[..., ExtractionCache]


class ExtractionCacheContract:
    """Behaviour every ExtractionCache adapter must show."""

    @pytest.fixture
    def make_cache(self) -> MakeCache:
        """``make_cache(max_entries=..., max_bytes=...)``: a fresh, empty cache."""
        pytest.fail("an ExtractionCacheContract subclass provides make_cache")

    def test_miss_then_hit_returns_the_bytes(self, make_cache: MakeCache) -> None:
        cache = make_cache()
        payload = bytes(range(256)) * 3
        assert cache.get(A, V1) is None
        cache.put(A, V1, payload)
        assert cache.get(A, V1) == payload
        assert cache.get(A, V2) is None  # a new extractor version misses
        assert cache.get(B, V1) is None

    def test_put_replaces_the_entry_of_the_same_key(self, make_cache: MakeCache) -> None:
        cache = make_cache()
        cache.put(A, V1, b"old")
        cache.put(A, V1, b"new")
        assert cache.get(A, V1) == b"new"
        assert cache.hashes() == {A}

    def test_entry_bound_evicts_the_oldest(self, make_cache: MakeCache) -> None:
        cache = make_cache(max_entries=2)
        cache.put(A, V1, b"1")
        cache.put(B, V1, b"2")
        cache.put(C, V1, b"3")
        assert cache.get(A, V1) is None
        assert (cache.get(B, V1), cache.get(C, V1)) == (b"2", b"3")

    def test_byte_bound_evicts_until_it_holds(self, make_cache: MakeCache) -> None:
        cache = make_cache(max_bytes=10)
        cache.put(A, V1, b"x" * 4)
        cache.put(B, V1, b"y" * 4)
        cache.put(C, V1, b"z" * 4)
        assert cache.get(A, V1) is None
        assert cache.hashes() == {B, C}
        cache.put(A, V2, b"w" * 11)  # bigger than the whole bound: not stored
        assert cache.get(A, V2) is None
        assert cache.hashes() == {B, C}

    def test_remove_by_hash(self, make_cache: MakeCache) -> None:
        cache = make_cache()
        cache.put(A, V1, b"1")
        cache.put(A, V2, b"2")
        cache.put(B, V1, b"3")
        assert cache.remove([A, C]) == 2
        assert cache.hashes() == {B}
        assert cache.remove([]) == 0

    def test_entries_per_scope_are_separate_and_pruned_together(
        self, make_cache: MakeCache
    ) -> None:
        # The cache keeps one entry per read scope by ending the version in ";scope=<key>"
        # (ADR 0072): such versions are separate keys, whatever their length, and removing
        # a hash removes it in every scope.
        cache = make_cache()
        mine, theirs = V1 + ";payload=3;scope=" + "1" * 32, V1 + ";payload=3;scope=" + "2" * 32
        cache.put(A, mine, b"mine")
        assert cache.get(A, theirs) is None
        cache.put(A, theirs, b"theirs")
        assert (cache.get(A, mine), cache.get(A, theirs)) == (b"mine", b"theirs")
        assert cache.hashes() == {A}
        assert cache.remove([A]) == 2
        assert cache.get(A, mine) is None and cache.get(A, theirs) is None
