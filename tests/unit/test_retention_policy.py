"""When a file expires under a retention policy (B5, ADR 0142): the domain rule alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from docbinder.domain.governance import RetentionPolicy
from docbinder.domain.model import Scope

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def test_from_creation_the_reads_and_the_time_it_was_set_do_not_count() -> None:
    policy = RetentionPolicy(Scope("m1"), 30 * DAY, set_at=T0 + 100 * DAY)
    assert policy.expires_at(T0, T0 + 50 * DAY) == T0 + 30 * DAY
    assert not policy.expires_nothing_by(T0 + 100 * DAY)


def test_from_the_last_read_the_latest_of_creation_read_and_setting_counts() -> None:
    policy = RetentionPolicy(Scope("m1"), 30 * DAY, "last_read", set_at=T0 + 10 * DAY)
    assert policy.expires_at(T0) == T0 + 40 * DAY  # never read: from when it was set
    assert policy.expires_at(T0, T0 + 20 * DAY) == T0 + 50 * DAY  # read since
    assert policy.expires_at(T0 + 15 * DAY, None) == T0 + 45 * DAY  # created since
    assert policy.expires_nothing_by(T0 + 40 * DAY - timedelta(microseconds=1))
    assert not policy.expires_nothing_by(T0 + 40 * DAY)


def test_a_policy_whose_setting_time_is_unknown_counts_from_creation_or_read() -> None:
    policy = RetentionPolicy(Scope("m1"), 30 * DAY, "last_read")
    assert policy.expires_at(T0) == T0 + 30 * DAY
    assert policy.expires_at(T0, T0 + 5 * DAY) == T0 + 35 * DAY
    assert not policy.expires_nothing_by(T0)


def test_an_expired_file_is_a_missing_file_to_callers_and_gone_to_http() -> None:
    from docbinder.domain.errors import FileExpired, FileItemNotFound
    from docbinder.integrations.http.errors import status_of

    refused = FileExpired("file x passed its retention period", expired_at=T0)
    assert isinstance(refused, FileItemNotFound) and refused.expired_at == T0
    assert status_of(refused) == (410, "expired")
    assert status_of(FileItemNotFound("file x not found")) == (404, "not_found")
