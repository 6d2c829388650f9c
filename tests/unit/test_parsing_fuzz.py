"""Property tests for the tolerant documentList parser (SPEC C6).

``DOCBINDER_FUZZ_EXAMPLES`` sets the number of examples per property (default 300);
a dedicated run can set e.g. 100000.
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docbinder import coerce_document_references
from docbinder.domain.parsing import MAX_RAW_LENGTH, REASONS
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReferenceList,
    FileReference,
)

FUZZ = settings(
    max_examples=int(os.environ.get("DOCBINDER_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Every code point, surrogates and control characters included.
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=200)

# Fragments that steer generated text into the parser's interesting paths.
FRAGMENTS = [
    "docItem:",
    "DOCITEM:",
    "doc_item :",
    "docList:",
    "file:",
    "File:",
    ":",
    " ",
    "\t",
    "\n",
    ".",
    ",",
    ";",
    "!",
    "?",
    "*",
    "'",
    '"',
    "`",
    "```",
    "```json\n",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    "\\",
    "/",
    "a1",
    "B2",
    "x.y",
    "-",
    "_",
    "null",
    "None",
    "nan",
    "writeFile:report.md",
    "3f2b8c1e-9a4d-4c6e-8f1a-2b3c4d5e6f70",
    '"id"',
    '"documents"',
    "'id'",
    "\x00",
    "\x1b",
    "\u2028",
    "\ud800",
    "\u00e9",
    "\u201c",
]
REFERENCE_TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join)
TEXT = st.one_of(ANY_TEXT, REFERENCE_TEXT)

KEYS = st.one_of(
    st.sampled_from(
        [
            "id",
            "documentId",
            "fileId",
            "label",
            "documentsLabel",
            "ref",
            "type",
            "documents",
            "documentList",
            "items",
            "name",
        ]
    ),
    ANY_TEXT,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.dictionaries(KEYS, children, max_size=6),
        st.lists(children, max_size=4).map(tuple),
    ),
    max_leaves=40,
)

CANONICAL_TYPES = (DocumentItemReference, DocumentListReference, FileReference)


def _check(result: object) -> DocumentReferenceList:
    assert isinstance(result, DocumentReferenceList)
    canonical = [str(ref) for ref in result.references]
    assert len(set(canonical)) == len(canonical)
    for ref in result.references:
        assert isinstance(ref, CANONICAL_TYPES)
        again = coerce_document_references(str(ref))
        assert again == DocumentReferenceList((ref,), ())
    for rejected in result.rejected:
        assert rejected.reason in REASONS
        assert isinstance(rejected.raw, str)
        assert 0 < len(rejected.raw) <= MAX_RAW_LENGTH
        assert rejected.raw.isprintable()
    return result


@FUZZ
@given(JSON_LIKE)
def test_any_json_like_value_gives_unique_canonical_references(value: object) -> None:
    result = _check(coerce_document_references(value))
    # Reading the result again keeps its references.
    assert coerce_document_references(result).references == result.references


@FUZZ
@given(TEXT)
def test_any_text_gives_unique_canonical_references(text: str) -> None:
    _check(coerce_document_references(text))


@FUZZ
@given(JSON_LIKE)
def test_json_encoded_values_never_raise(value: object) -> None:
    try:
        encoded = json.dumps(value)
    except (TypeError, ValueError):
        encoded = repr(value)
    _check(coerce_document_references(encoded))
    _check(coerce_document_references("```json\n" + encoded + "\n```"))
    _check(coerce_document_references("Here: " + encoded))
