"""Running a unit of work again when the database aborted it to end a deadlock.

PostgreSQL and MariaDB end one of two transactions that wait for each other
(or, on PostgreSQL, one whose snapshot cannot be serialized) and say so with
a :class:`~docbinder.domain.errors.TransactionAborted`; nothing of that
transaction was committed, and the other one goes on. Concurrent produce,
delete and replace calls meet such cycles now and then (the unique indexes
and the workflow row are locked in varying order). The writing steps run
their whole unit of work again, a bounded number of times, with a short
random pause; no other error is retried.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from docbinder.domain.errors import TransactionAborted

log = logging.getLogger(__name__)

T = TypeVar("T")

TRANSIENT_ATTEMPTS = 5
"""How many times in all a unit of work the database aborted is run (the first run included)."""

PAUSE_SECONDS = 0.02
"""Upper bound of the random pause before the second run, in seconds; doubled for each further one."""


def run_again_if_aborted(run: Callable[[], T], what: str, attempts: int = TRANSIENT_ATTEMPTS) -> T:
    """``run()``, run again while it raises :class:`TransactionAborted`, at most ``attempts`` times.

    ``run`` must open its own unit(s) of work and leave nothing behind
    outside them when it raises (the store's blob write happens before, the
    blob-store calls after). ``what`` names the operation in the log. The
    pause before run ``n + 1`` is uniform in ``[0, PAUSE_SECONDS * 2**(n-1)]``
    seconds, so two processes that deadlocked do not meet again in step.
    The last :class:`TransactionAborted` propagates; any other exception at
    once.
    """
    for attempt in range(1, attempts + 1):
        try:
            return run()
        except TransactionAborted as exc:
            if attempt == attempts:
                log.warning(
                    "%s: the database aborted it %d times; giving up (%s)", what, attempt, exc
                )
                raise
            log.info("%s: the database aborted it (%s); running it again", what, exc)
            time.sleep(random.uniform(0, PAUSE_SECONDS * 2 ** (attempt - 1)))
    raise AssertionError("unreachable: attempts must be at least 1")
