"""Shared test fixtures and the backend switch.

Backends that need a server (PostgreSQL, MariaDB, S3 via moto) are skipped with
the reason printed when unreachable locally; with ``CI=true`` in the
environment an unreachable backend fails the test instead, so CI cannot pass
while hiding a backend.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

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


# -- the reliability figures (tests/reliability/harness.py) --------------------------------
# Printed at the end of the run. Under pytest-xdist each worker hands its figures to the
# controller when it finishes (``workeroutput``, read in ``pytest_testnodedown``), so the
# totals are the whole run's, as in a run without workers.

_LEDGER_KEY = "docbinder_reliability_ledger"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: put this worker's reliability figures where the controller reads them."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        from tests.reliability.harness import LEDGER

        output[_LEDGER_KEY] = LEDGER.as_data()


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without that plugin
def pytest_testnodedown(node: object, error: object) -> None:
    """On the xdist controller: add a finished worker's reliability figures to the run's."""
    data = getattr(node, "workeroutput", {}).get(_LEDGER_KEY)
    if data:
        from tests.reliability.harness import LEDGER

        LEDGER.merge(data)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the faults injected and survived, the hostile inputs tried and the load figures."""
    from tests.reliability.harness import LEDGER

    lines = LEDGER.lines()
    if lines:
        terminalreporter.section("reliability figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def ocr_ready() -> None:
    """Skip (locally) or fail (in CI) unless OCR can run: the ``ocr`` extra and Tesseract's data.

    ``.ci/run`` installs the ``tesseract-ocr`` package where it is missing.
    """
    from docbinder.adapters.extract import DefaultContentExtractor

    for fmt in ("pdf", "image"):
        problem = DefaultContentExtractor().ocr_problem(fmt)
        if problem is not None:
            backend_unavailable("ocr", problem)


@pytest.fixture(autouse=True)
def _docbinder_logger_as_found() -> Iterator[None]:
    """The ``docbinder`` logger after each test as before it.

    A command run in-process configures it (its own handler, ``propagate = False``);
    left so, later tests in the same worker would no longer see its records in
    ``caplog``.
    """
    logger = logging.getLogger("docbinder")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]
