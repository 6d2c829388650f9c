"""Rejection reasons and the limits that bound one parse (SPEC C6).

The vocabulary every other module of the parser shares and the package
exports: what a :class:`~docbinder.domain.references.RejectedReference` may say
(``REASON_*``, :data:`REASONS`) and how much one call reads at most
(``MAX_*``). Limits that only one step applies live with that step.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------- reasons

REASON_NULL: Final = "null"
"""A null value (``None``, ``"null"``, ``"None"``, ...) stands where a reference was expected,
e.g. as a list element. A null at the top level or as a wrapper's value means "no documents"
and is not rejected."""

REASON_EMPTY: Final = "empty"
"""An empty or whitespace-only string stands where a reference was expected (a list element)."""

REASON_EMPTY_ID: Final = "empty_id"
"""A prefix without an id or label (``docItem:``), or an id field holding ``""``."""

REASON_NULL_ID: Final = "null_id"
"""The id or label is a null word (see :data:`NULL_WORDS`), or an id field holds ``None``."""

REASON_INVALID_ID: Final = "invalid_id"
"""The id has characters outside ``A-Z a-z 0-9 . _ -`` or does not start with a letter/digit."""

REASON_INVALID_LABEL: Final = "invalid_label"
"""The label holds non-printable characters (control characters, tabs, lone surrogates, ...)."""

REASON_NOT_A_REFERENCE: Final = "not_a_reference"
"""A string or dict holds no reference at all."""

REASON_NUMBER_NOT_ALLOWED: Final = "number_not_allowed"
"""A number; numbers are never turned into ids."""

REASON_BOOLEAN_NOT_ALLOWED: Final = "boolean_not_allowed"
"""A boolean; booleans are never turned into ids."""

REASON_UNSUPPORTED_TYPE: Final = "unsupported_type"
"""A value of a type the parser does not read (sets, arbitrary objects, undecodable bytes)."""

REASON_TOO_DEEP: Final = "too_deep"
"""The value is nested deeper than :data:`MAX_DEPTH` (containers and decoding layers)."""

REASON_TOO_MANY_ITEMS: Final = "too_many_items"
"""The work budget (:data:`MAX_VALUES`, :data:`MAX_REFERENCES`) or the number of kept
rejections (:data:`MAX_REJECTED`) ran out; the rest of the input was not read."""

REASON_TOO_LONG: Final = "too_long"
"""A string longer than :data:`MAX_TEXT_LENGTH` (or past :data:`MAX_TOTAL_TEXT` in all),
an id longer than :data:`MAX_ID_LENGTH` or a label longer than ``MAX_LABEL_LENGTH``."""

REASON_CYCLIC: Final = "cyclic"
"""A list or dict that contains itself."""

REASON_AMBIGUOUS: Final = "ambiguous"
"""The candidate's canonical form would not read back as the same reference."""

REASON_UNREADABLE: Final = "unreadable"
"""Inspecting the value raised (e.g. an object with a broken ``__class__``)."""

REASONS: Final = frozenset(
    {
        REASON_NULL,
        REASON_EMPTY,
        REASON_EMPTY_ID,
        REASON_NULL_ID,
        REASON_INVALID_ID,
        REASON_INVALID_LABEL,
        REASON_NOT_A_REFERENCE,
        REASON_NUMBER_NOT_ALLOWED,
        REASON_BOOLEAN_NOT_ALLOWED,
        REASON_UNSUPPORTED_TYPE,
        REASON_TOO_DEEP,
        REASON_TOO_MANY_ITEMS,
        REASON_TOO_LONG,
        REASON_CYCLIC,
        REASON_AMBIGUOUS,
        REASON_UNREADABLE,
    }
)
"""Every reason a :class:`RejectedReference` made by this module can carry."""

# --------------------------------------------------------------------------- limits

MAX_DEPTH: Final = 32
"""Deepest nesting read: each list, dict and decoding layer (JSON in a string, a code
fence) adds one level. Deeper values are rejected with :data:`REASON_TOO_DEEP`."""

MAX_VALUES: Final = 10_000
"""Values examined in one call (containers, dict keys, scalars, references found in
text). Past it, reading stops with :data:`REASON_TOO_MANY_ITEMS`."""

MAX_REFERENCES: Final = 1_000
"""Distinct references returned at most. Past it, reading stops with
:data:`REASON_TOO_MANY_ITEMS`."""

MAX_REJECTED: Final = 100
"""Distinct rejections kept; further ones are summed up in one last entry with
:data:`REASON_TOO_MANY_ITEMS`."""

MAX_TEXT_LENGTH: Final = 100_000
"""Longest string examined, in characters; longer ones are rejected unread with
:data:`REASON_TOO_LONG`."""

MAX_TOTAL_TEXT: Final = 1_000_000
"""Characters examined in one call across all strings and decoding layers; strings past
it are rejected unread with :data:`REASON_TOO_LONG`."""

MAX_ID_LENGTH: Final = 128
"""Longest id, in characters (the bound the domain model puts on ids)."""

MAX_RAW_LENGTH: Final = 80
"""Longest ``RejectedReference.raw``, in characters."""

NULL_WORDS: Final = frozenset({"null", "none", "undefined", "nan", "nil"})
"""Words (compared in lower case) that mean "no value" where an id, label or reference
stands."""
