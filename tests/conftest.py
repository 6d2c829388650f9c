"""Shared test fixtures and the backend switch.

Backends that need a server (PostgreSQL, MariaDB, S3 via moto) are skipped with
the reason printed when unreachable locally; with ``CI=true`` in the
environment an unreachable backend fails the test instead, so CI cannot pass
while hiding a backend.
"""

from __future__ import annotations

import os

import pytest

# docbinder's own plugin is listed too, so the docbinder_* fixtures are there even when the
# installed metadata predates its pytest11 entry point (same name: registered once).
pytest_plugins = ["tests.s3server", "docbinder.testing.plugin"]

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

POSTGRES_URL = os.environ.get(
    "DOCBINDER_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get(
    "DOCBINDER_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test?charset=utf8mb4"
)


def backend_unavailable(name: str, reason: str) -> None:
    """Skip (locally) or fail (in CI) because backend ``name`` cannot be used."""
    message = f"backend {name} unavailable: {reason}"
    if IN_CI:
        pytest.fail(message + " (CI=true requires every backend)", pytrace=False)
    pytest.skip(message)
