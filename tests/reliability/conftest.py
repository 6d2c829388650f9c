"""Reliability tests; their session figures are printed by ``tests/conftest.py``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _restore_docbinder_logger() -> Iterator[None]:
    """Undo any change a test (or the CLI it ran) made to the ``docbinder`` logger."""
    logger = logging.getLogger("docbinder")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]
