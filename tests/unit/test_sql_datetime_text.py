"""``UtcDateTime`` binds on SQLite the text SQLAlchemy's own processors would give."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

from docbinder.adapters.sql.schema import UtcDateTime


def _composed(dialect: sa.Dialect) -> object:
    """``process_bind_param`` followed by the dialect type's own processor, as SQLAlchemy composes them."""
    decorator = UtcDateTime().dialect_impl(dialect)
    inner = decorator.impl_instance.bind_processor(dialect)  # type: ignore[attr-defined]

    def process(value: datetime | None) -> object:
        bound = decorator.process_bind_param(value, dialect)  # type: ignore[attr-defined]
        return bound if inner is None else inner(bound)

    return process


def _moments() -> list[datetime]:
    rng = random.Random(11)
    zones = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=11))]
    zones.append(ZoneInfo("Europe/Berlin"))
    moments = [
        datetime(1, 1, 2, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(9999, 12, 30, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),
        datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=ZoneInfo("Europe/Berlin")),
    ]
    for _ in range(5000):
        moment = datetime(2, 1, 1, tzinfo=UTC) + timedelta(
            seconds=rng.randrange(315_000_000_000),
            microseconds=rng.choice([0, rng.randrange(10**6)]),
        )
        moments.append(moment.astimezone(rng.choice(zones)))
    return moments


def test_sqlite_text_is_the_composed_processors_text() -> None:
    dialect = sqlite.dialect()
    fused = UtcDateTime().dialect_impl(dialect).bind_processor(dialect)
    composed = _composed(dialect)
    assert fused is not None
    assert fused(None) is None
    for moment in _moments():
        assert fused(moment) == composed(moment), moment  # type: ignore[operator]
    with pytest.raises(ValueError, match="naive"):
        fused(datetime(2026, 1, 1))


@pytest.mark.parametrize("dialect", [postgresql.dialect(), mysql.dialect(), sqlite.dialect()])
def test_a_stored_timestamp_reads_back_as_the_same_moment(dialect: sa.Dialect) -> None:
    decorator = UtcDateTime().dialect_impl(dialect)
    processor = decorator.bind_processor(dialect)
    moment = datetime(2026, 5, 17, 8, 9, 10, 123_456, tzinfo=timezone(timedelta(hours=2)))
    bound = moment if processor is None else processor(moment)
    if dialect.name == "sqlite":
        assert bound == "2026-05-17 06:09:10.123456"
    else:
        assert bound == _composed(dialect)(moment)  # type: ignore[operator]


def test_sqlite_with_its_own_storage_format_keeps_the_composed_pair() -> None:
    class Custom(UtcDateTime):
        cache_ok = True

        def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[datetime]:
            return dialect.type_descriptor(
                sqlite.DATETIME(storage_format="%(year)04d/%(month)02d/%(day)02d")
            )

    dialect = sqlite.dialect()
    processor = Custom().dialect_impl(dialect).bind_processor(dialect)
    assert processor is not None
    assert processor(datetime(2026, 5, 17, 8, 9, tzinfo=UTC)) == "2026/05/17"
