"""Module-scoped private SQL databases shared by the contract suites (see ``sql_backends``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.sql_backends import SqlBackend, provision


def _backend(name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    with provision(name, tmp_path_factory.mktemp(name)) as backend:
        yield backend


@pytest.fixture(scope="module")
def sqlite_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    """A migrated SQLite file database for this test module."""
    yield from _backend("sqlite", tmp_path_factory)


@pytest.fixture(scope="module")
def postgresql_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    """A migrated private PostgreSQL schema for this test module."""
    yield from _backend("postgresql", tmp_path_factory)


@pytest.fixture(scope="module")
def mariadb_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    """A migrated private MariaDB database for this test module."""
    yield from _backend("mariadb", tmp_path_factory)
