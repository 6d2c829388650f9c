"""The renewal of an upload's claim (ADR 0130): it goes on after a failed unit, stops once the
claim is gone, and moves nothing but ``claimed_at``."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from docbinder.adapters.memory import MemoryMetadataStore
from docbinder.application.use_cases.provide_file import _Renewal
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Scope
from docbinder.domain.providers import ProviderCopy, ProviderCopyKey

KEY = ProviderCopyKey("ab" * 32, "openai", "main", Scope("acme"))
START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


class TickingClock:
    """A clock one second further on at every reading."""

    def __init__(self) -> None:
        self.at = START

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def failing_first(store: MemoryMetadataStore) -> Callable[[], Any]:
    """The store's unit-of-work factory, whose first unit fails as a database gone away does."""
    calls = {"n": 0}

    def factory() -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise StorageError("the database is gone for a moment")
        return store.unit_of_work()

    return factory


def claimed(store: MemoryMetadataStore) -> ProviderCopy:
    copy = ProviderCopy(KEY, "uploading", "mine", START, size=3, upload_token="tok")
    with store.unit_of_work() as u:
        u.provider_copies.claim(copy)
        u.commit()
    return copy


def current(store: MemoryMetadataStore) -> ProviderCopy | None:
    with store.unit_of_work() as u:
        return u.provider_copies.get(KEY)


def test_renewals_go_on_after_a_failed_unit_and_move_only_the_claim_time() -> None:
    store = MemoryMetadataStore()
    copy = claimed(store)
    with _Renewal(failing_first(store), TickingClock(), copy, 0.02) as renewal:
        time.sleep(0.3)
    assert renewal.renewals >= 2  # the failed first one did not stop them
    now = current(store)
    assert now is not None and now.claimed_at > START
    assert now == attrs.evolve(copy, claimed_at=now.claimed_at)


def test_renewals_stop_once_the_claim_is_someone_elses() -> None:
    store = MemoryMetadataStore()
    copy = claimed(store)
    taken = attrs.evolve(copy, claim="theirs")
    with store.unit_of_work() as u:
        assert u.provider_copies.replace("mine", taken)
        u.commit()
    with _Renewal(store.unit_of_work, TickingClock(), copy, 0.02) as renewal:
        time.sleep(0.2)
        assert not renewal._thread.is_alive()  # stopped at its first tick
    assert renewal.renewals == 0 and current(store) == taken
