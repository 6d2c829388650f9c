"""Reliability tests: the session figures are printed at the end of the run."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.reliability.harness import LEDGER


@pytest.fixture(autouse=True)
def _restore_docbinder_logger() -> Iterator[None]:
    """Undo any change a test (or the CLI it ran) made to the ``docbinder`` logger."""
    logger = logging.getLogger("docbinder")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the faults injected and survived, the hostile inputs tried and the load figures."""
    lines = LEDGER.lines()
    if lines:
        terminalreporter.section("reliability figures")
        for line in lines:
            terminalreporter.write_line(line)
