"""Listings read pages until they have enough visible entries."""

from __future__ import annotations

from docbinder.application.steps.paging import visible_newest_first


class Rows:
    """0..n-1 served newest first (n-1 down to 0) in keyset pages; counts the calls."""

    def __init__(self, n: int) -> None:
        self.rows = list(range(n - 1, -1, -1))
        self.calls = 0

    def fetch(self, size: int, after: int | None) -> list[int]:
        self.calls += 1
        start = 0 if after is None else self.rows.index(after) + 1
        return self.rows[start : start + size]


def test_a_short_listing_reads_one_page_of_many() -> None:
    rows = Rows(100_000)
    assert visible_newest_first(rows.fetch, lambda r: r % 3 == 0, 5, page_size=50) == [
        99_999,
        99_996,
        99_993,
        99_990,
        99_987,
    ]
    assert rows.calls == 1


def test_sparse_visibility_reads_on_until_the_limit() -> None:
    rows = Rows(1_000)
    got = visible_newest_first(rows.fetch, lambda r: r % 100 == 0, 3, page_size=50)
    assert got == [900, 800, 700]
    assert rows.calls == 6


def test_no_limit_reads_everything_once() -> None:
    rows = Rows(1_001)
    got = visible_newest_first(rows.fetch, lambda r: r % 2 == 0, None, page_size=100)
    assert got == list(range(1_000, -1, -2))
    assert rows.calls == 11


def test_a_limit_of_zero_reads_nothing() -> None:
    rows = Rows(10)
    assert visible_newest_first(rows.fetch, lambda r: True, 0) == []
    assert rows.calls == 0


def test_fewer_rows_than_the_limit() -> None:
    rows = Rows(3)
    assert visible_newest_first(rows.fetch, lambda r: True, 10) == [2, 1, 0]
    assert rows.calls == 1
