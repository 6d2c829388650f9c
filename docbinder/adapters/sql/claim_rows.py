"""The ``docbinder_meta`` rows of a database's claim tokens, shared by the SQL and SQLite adapters (ADR 0075).

Row ``database_claim`` holds the current token, rows ``database_claim_old:<token>`` the
ones it replaced, numbered in rotation order; row ``database_claim_previous`` is the one
earlier token databases kept before the history. Pure functions over the rows as a dict.
"""

from __future__ import annotations

from docbinder.ports.metadata import CLAIM_TOKENS_KEPT

CLAIM = "database_claim"
PREVIOUS_CLAIM = "database_claim_previous"
OLD_CLAIM = "database_claim_old:"
"""Prefix of the ``docbinder_meta`` rows of replaced claim tokens: ``<prefix><token>`` -> rotation number."""


def claims_of(meta: dict[str, str]) -> tuple[str, ...]:
    """The claim tokens in ``docbinder_meta`` rows ``meta``, newest first (at most :data:`CLAIM_TOKENS_KEPT`)."""
    old = sorted(
        (
            (value, name[len(OLD_CLAIM) :])
            for name, value in meta.items()
            if name.startswith(OLD_CLAIM)
        ),
        reverse=True,
    )
    tokens = [meta[CLAIM]] if CLAIM in meta else []
    tokens += [token for _, token in old]
    if PREVIOUS_CLAIM in meta:
        tokens.append(meta[PREVIOUS_CLAIM])
    return tuple(dict.fromkeys(tokens))[:CLAIM_TOKENS_KEPT]


def claim_history_change(meta: dict[str, str], replaced: str) -> tuple[tuple[str, str], list[str]]:
    """The row that records ``replaced`` (name, rotation number) and the names of rows to drop.

    Read after the compare-and-set of ``database_claim`` in the same unit, so
    rotations are numbered one after the other; the oldest beyond
    :data:`CLAIM_TOKENS_KEPT` (the current token counts) are dropped.
    """
    old = sorted((value, name) for name, value in meta.items() if name.startswith(OLD_CLAIM))
    number = int(old[-1][0]) + 1 if old else 1
    drop = [name for _, name in old[: max(0, len(old) + 2 - CLAIM_TOKENS_KEPT)]]
    return (f"{OLD_CLAIM}{replaced}", f"{number:012d}"), drop
