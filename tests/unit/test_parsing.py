"""Tolerant documentList parsing (SPEC C6): exact outputs for the shapes models send."""

from __future__ import annotations

import json
from typing import Any

import pytest

from docbinder import coerce_document_references
from docbinder.domain import parsing
from docbinder.domain.parsing import (
    MAX_DEPTH,
    MAX_RAW_LENGTH,
    MAX_REFERENCES,
    MAX_REJECTED,
    MAX_TEXT_LENGTH,
    MAX_VALUES,
    REASON_AMBIGUOUS,
    REASON_BOOLEAN_NOT_ALLOWED,
    REASON_CYCLIC,
    REASON_EMPTY,
    REASON_EMPTY_ID,
    REASON_INVALID_ID,
    REASON_INVALID_LABEL,
    REASON_NOT_A_REFERENCE,
    REASON_NULL,
    REASON_NULL_ID,
    REASON_NUMBER_NOT_ALLOWED,
    REASON_TOO_DEEP,
    REASON_TOO_LONG,
    REASON_TOO_MANY_ITEMS,
    REASON_UNREADABLE,
    REASON_UNSUPPORTED_TYPE,
    REASONS,
)
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReferenceList,
    FileReference,
    RejectedReference,
)

UUID = "3f2b8c1e-9a4d-4c6e-8f1a-2b3c4d5e6f70"


def parse(value: object) -> tuple[list[str], list[tuple[str, str]]]:
    """Canonical references and (raw, reason) rejections of ``value``."""
    result = coerce_document_references(value)
    assert isinstance(result, DocumentReferenceList)
    return [str(ref) for ref in result.references], [(r.raw, r.reason) for r in result.rejected]


# --------------------------------------------------------------------------- the required shapes

ACCEPTED: list[tuple[str, object, list[str]]] = [
    ("list of docItem strings", ["docItem:a1", "docItem:b2"], ["docItem:a1", "docItem:b2"]),
    ("list of dicts with id", [{"id": "a1", "name": "x.pdf"}], ["docItem:a1"]),
    (
        "documents wrapper",
        {"documents": [{"id": "a1"}, {"id": "b2"}]},
        ["docItem:a1", "docItem:b2"],
    ),
    ("single string", "docItem:a1", ["docItem:a1"]),
    ("JSON in a string", '["docItem:a1","docItem:b2"]', ["docItem:a1", "docItem:b2"]),
    (
        "code fence with json info string",
        '```json\n["docItem:a1","docItem:b2"]\n```',
        ["docItem:a1", "docItem:b2"],
    ),
    ("double-encoded inner list", {"documents": '[{"id": "a1"}]'}, ["docItem:a1"]),
    ("nested lists", [["docItem:a1"], ["docItem:b2"]], ["docItem:a1", "docItem:b2"]),
    (
        "comma and newline separated",
        "docItem:a1, docItem:b2\ndocItem:c3",
        ["docItem:a1", "docItem:b2", "docItem:c3"],
    ),
    ("upper-case prefix, trailing dot", "DOCITEM:a1.", ["docItem:a1"]),
    ("backticks", "`docItem:a1`", ["docItem:a1"]),
    ("parentheses", "(docItem:a1)", ["docItem:a1"]),
    ("angle brackets", "<docItem:a1>", ["docItem:a1"]),
    ("space after colon, trailing semicolon", "docItem: a1;", ["docItem:a1"]),
    ("duplicates dropped", ["docItem:a1", "docItem:a1"], ["docItem:a1"]),
    ("label with colon and dot", "docList:writeFile:report.md", ["docList:writeFile:report.md"]),
    ("bare UUID", UUID, [f"docItem:{UUID}"]),
    ("file reference", "file:abc", ["file:abc"]),
    ("single quotes", "'docItem:a1'", ["docItem:a1"]),
    ("double quotes", '"docItem:a1"', ["docItem:a1"]),
    (
        "chatty free text",
        "Please summarise docItem:a1 and docItem:b2.",
        ["docItem:a1", "docItem:b2"],
    ),
]


@pytest.mark.parametrize(
    ("value", "expected"), [case[1:] for case in ACCEPTED], ids=[case[0] for case in ACCEPTED]
)
def test_required_shapes_are_read_exactly(value: object, expected: list[str]) -> None:
    assert parse(value) == (expected, [])


@pytest.mark.parametrize("value", [None, "", [], {}], ids=["None", "empty-str", "list", "dict"])
def test_nothing_gives_nothing_and_rejects_nothing(value: object) -> None:
    assert parse(value) == ([], [])


def test_nulls_and_empty_ids_in_a_list_are_each_rejected() -> None:
    value = [None, "docItem:", "docItem:null", "docItem:None", {"id": None}]
    assert parse(value) == (
        [],
        [
            ("None", REASON_NULL),
            ("'docItem:'", REASON_EMPTY_ID),
            ("'docItem:null'", REASON_NULL_ID),
            ("'docItem:None'", REASON_NULL_ID),
            ("{'id': None}", REASON_NULL_ID),
        ],
    )


@pytest.mark.parametrize(
    ("value", "rejected"),
    [
        (42, ("42", REASON_NUMBER_NOT_ALLOWED)),
        (True, ("True", REASON_BOOLEAN_NOT_ALLOWED)),
        (3.5, ("3.5", REASON_NUMBER_NOT_ALLOWED)),
    ],
)
def test_numbers_and_booleans_are_rejected(value: object, rejected: tuple[str, str]) -> None:
    assert parse(value) == ([], [rejected])


def test_string_without_any_reference_is_rejected() -> None:
    assert parse("hello world") == ([], [("'hello world'", REASON_NOT_A_REFERENCE)])


# --------------------------------------------------------------------------- more string forms


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("DocItem:a1", ["docItem:a1"]),
        ("docitem:a1", ["docItem:a1"]),
        ("doc_item:a1", ["docItem:a1"]),
        ("docItem : a1", ["docItem:a1"]),
        ("docItem:a1!", ["docItem:a1"]),
        ("docItem:a1?", ["docItem:a1"]),
        ("docItem:a1:", ["docItem:a1"]),
        ("docItem:a1...", ["docItem:a1"]),
        ("(docItem:a1).", ["docItem:a1"]),
        ("**docItem:a1**", ["docItem:a1"]),
        ("[docItem:a1]", ["docItem:a1"]),
        ("\u201cdocItem:a1\u201d", ["docItem:a1"]),
        ("  docItem:a1  ", ["docItem:a1"]),
        ("docItem:A1-b_2.v3", ["docItem:A1-b_2.v3"]),
        ("docItem:a1;docItem:b2", ["docItem:a1", "docItem:b2"]),
        ("docItem:a1\tdocItem:b2", ["docItem:a1", "docItem:b2"]),
        ("- docItem:a1\n- docItem:b2", ["docItem:a1", "docItem:b2"]),
        ("FILE:abc", ["file:abc"]),
        ("file: abc", ["file:abc"]),
        ("DOCLIST:writeFile:report.md", ["docList:writeFile:report.md"]),
        ("docList: writeFile:report.md", ["docList:writeFile:report.md"]),
        ("docList:writeFile:report.md.", ["docList:writeFile:report.md"]),
        ("docList:writeFile:Q3 report.pdf", ["docList:writeFile:Q3 report.pdf"]),
        ("docList:datasource:sharepoint", ["docList:datasource:sharepoint"]),
        (
            "Use docList:writeFile:report.md, then docItem:x9.",
            ["docList:writeFile:report.md", "docItem:x9"],
        ),
        (UUID.upper(), [f"docItem:{UUID}"]),
        (f"DOCITEM:{UUID.upper()}", [f"docItem:{UUID}"]),
        (f"file:{UUID.replace('-', '')}", [f"file:{UUID}"]),
        (f"see {UUID}.", [f"docItem:{UUID}"]),
        (f"file:{UUID}", [f"file:{UUID}"]),
        ("[docItem:a1](docItem:a1)", ["docItem:a1"]),
        ('[\\"docItem:a1\\"]', ["docItem:a1"]),
    ],
)
def test_string_forms(value: str, expected: list[str]) -> None:
    assert parse(value) == (expected, [])


def test_prose_words_around_references_are_ignored_without_rejection() -> None:
    assert parse("this file: is nice, read docItem:q1 please") == (["docItem:q1"], [])


def test_file_urls_and_label_words_are_not_references() -> None:
    assert parse("file:///tmp/x") == ([], [("'file:///tmp/x'", REASON_NOT_A_REFERENCE)])
    assert parse("writeFile:report.md") == (
        [],
        [("'writeFile:report.md'", REASON_NOT_A_REFERENCE)],
    )


def test_uuid_inside_a_file_name_is_not_a_reference() -> None:
    assert parse(f"{UUID}.pdf") == ([], [(f"'{UUID}.pdf'", REASON_NOT_A_REFERENCE)])


@pytest.mark.parametrize(
    ("value", "rejected"),
    [
        ("docItem:a/b", [("'docItem:a/b'", REASON_INVALID_ID)]),
        ("docItem:a\u00e91", [("'docItem:a\u00e91'", REASON_INVALID_ID)]),
        ("docItem:-a", [("'docItem:-a'", REASON_INVALID_ID)]),
        ("docItem:undefined", [("'docItem:undefined'", REASON_NULL_ID)]),
        ("docItem:NaN.", [("'docItem:NaN'", REASON_NULL_ID)]),
        ("docList:", [("'docList:'", REASON_EMPTY_ID)]),
        ("docList:null", [("'docList:null'", REASON_NULL_ID)]),
        ("docItem:" + "a" * 129, [("'docItem:" + "a" * 68 + "...", REASON_TOO_LONG)]),
        ("docList:x\udc00y", [("'docList:x\\udc00y'", REASON_INVALID_LABEL)]),
    ],
)
def test_bad_ids_and_labels_are_rejected(value: str, rejected: list[tuple[str, str]]) -> None:
    assert parse(value) == ([], rejected)


def test_longest_id_is_accepted() -> None:
    assert parse("docItem:" + "a" * 128) == (["docItem:" + "a" * 128], [])


def test_bad_reference_next_to_a_good_one_is_rejected_alone() -> None:
    assert parse("docItem:null and docItem:a1") == (
        ["docItem:a1"],
        [("'docItem:null'", REASON_NULL_ID)],
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("```\ndocItem:a1\n```", ["docItem:a1"]),
        ('```json\n{"documents": [{"id": "a1"}]}\n```', ["docItem:a1"]),
        ("```docItem:a1```", ["docItem:a1"]),
        ('Here you go:\n```json\n[{"id": "a1"}]\n```\nThanks', ["docItem:a1"]),
        ('The list is [{"id": "a1"}, {"id": "b2"}] as asked', ["docItem:a1", "docItem:b2"]),
        ("[{'id': 'a1', 'name': 'x.pdf'}]", ["docItem:a1"]),
        ("('docItem:a1', 'docItem:b2',)", ["docItem:a1", "docItem:b2"]),
        ("{'documents': [{'fileId': 'f1'}], 'other': None}", ["file:f1"]),
        (json.dumps(json.dumps(["docItem:a1"])), ["docItem:a1"]),
        ('"docItem:a1, docItem:b2"', ["docItem:a1", "docItem:b2"]),
    ],
)
def test_encoded_and_fenced_forms(value: str, expected: list[str]) -> None:
    assert parse(value) == (expected, [])


@pytest.mark.parametrize(
    "value",
    [
        '```json ["report.pdf", "docItem:a1", "docItem:b2"]```',
        '```JSON  ["report.pdf", "docItem:a1", "docItem:b2"] ```',
        "```python ('report.pdf', 'docItem:a1', 'docItem:b2')```",
    ],
)
def test_a_one_line_fence_with_an_info_string_reads_its_structure_whole(value: str) -> None:
    # The name that is no reference is reported, not dropped; the later items stay whole.
    assert parse(value) == (
        ["docItem:a1", "docItem:b2"],
        [("'report.pdf'", REASON_NOT_A_REFERENCE)],
    )


def test_a_one_line_fence_of_prose_keeps_its_first_word() -> None:
    assert parse("```see docItem:a1```") == (["docItem:a1"], [])


def test_many_encoding_layers_are_read() -> None:
    value: object = ["docItem:a1"]
    for _ in range(8):
        value = json.dumps(value)
    assert parse(value) == (["docItem:a1"], [])


@pytest.mark.parametrize(
    "value", ["null", "None", " undefined ", "[]", "{}", '""', "```json\n[]\n```"]
)
def test_null_and_empty_text_at_top_level_is_nothing(value: str) -> None:
    assert parse(value) == ([], [])


def test_null_and_empty_text_inside_a_list_is_rejected() -> None:
    assert parse(["null", "", "   ", "[null]"]) == (
        [],
        [
            ("'null'", REASON_NULL),
            ("''", REASON_EMPTY),
            ("'   '", REASON_EMPTY),
            ("None", REASON_NULL),
        ],
    )


def test_empty_containers_inside_a_list_are_nothing() -> None:
    assert parse([[], {}, "docItem:a1"]) == (["docItem:a1"], [])


# --------------------------------------------------------------------------- dicts


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"documentId": "a1"}, ["docItem:a1"]),
        ({"docItemId": "a1"}, ["docItem:a1"]),
        ({"document_id": "a1"}, ["docItem:a1"]),
        ({"chatDocumentId": "a1"}, ["docItem:a1"]),
        ({"docItem": "a1"}, ["docItem:a1"]),
        ({"id": " a1 "}, ["docItem:a1"]),
        ({"id": UUID}, [f"docItem:{UUID}"]),
        ({"id": "docItem:a1"}, ["docItem:a1"]),
        ({"id": "file:f1"}, ["file:f1"]),
        ({"fileId": "f1", "fileName": "x.pdf"}, ["file:f1"]),
        ({"file_id": "f1"}, ["file:f1"]),
        ({"id": "a1", "fileId": "f1", "messageId": "m1"}, ["docItem:a1"]),
        ({"label": "writeFile:report.md"}, ["docList:writeFile:report.md"]),
        ({"documentsLabel": "writeFile:my report.md"}, ["docList:writeFile:my report.md"]),
        ({"docList": "datasource:web"}, ["docList:datasource:web"]),
        ({"ref": "docItem:a1"}, ["docItem:a1"]),
        ({"reference": "file:f1", "id": "ignored"}, ["file:f1"]),
        ({"document": {"id": "a1"}}, ["docItem:a1"]),
        ({"type": "file", "id": "f1"}, ["file:f1"]),
        ({"kind": "docList", "id": "writeFile:a.md"}, ["docList:writeFile:a.md"]),
        ({"type": "application/pdf", "id": "a1"}, ["docItem:a1"]),
        ({"id": None, "fileId": "f1"}, ["file:f1"]),
        ({"documentList": ["docItem:a1"]}, ["docItem:a1"]),
        ({"document_list": "docItem:a1, docItem:b2"}, ["docItem:a1", "docItem:b2"]),
        ({"references": ["file:f1"]}, ["file:f1"]),
        ({"items": [{"id": "a1"}]}, ["docItem:a1"]),
        ({"Documents": [{"id": "a1"}], "id": "wf1"}, ["docItem:a1"]),
        ({"documents": ["docItem:a1"], "items": ["docItem:b2"]}, ["docItem:a1", "docItem:b2"]),
        ({"documents": None}, []),
        ({"documents": ""}, []),
        ({1: "docItem:a1", "id": "a2"}, ["docItem:a2"]),
    ],
)
def test_dict_forms(value: dict[Any, Any], expected: list[str]) -> None:
    assert parse(value) == (expected, [])


@pytest.mark.parametrize(
    ("value", "rejected"),
    [
        ({"name": "x.pdf"}, [("{'name': 'x.pdf'}", REASON_NOT_A_REFERENCE)]),
        ({"id": ""}, [("{'id': ''}", REASON_EMPTY_ID)]),
        ({"id": "null"}, [("{'id': 'null'}", REASON_NULL_ID)]),
        ({"id": 42}, [("{'id': 42}", REASON_NUMBER_NOT_ALLOWED)]),
        ({"id": False}, [("{'id': False}", REASON_BOOLEAN_NOT_ALLOWED)]),
        ({"id": ["a1"]}, [("{'id': ['a1']}", REASON_UNSUPPORTED_TYPE)]),
        ({"id": "a 1"}, [("{'id': 'a 1'}", REASON_INVALID_ID)]),
        ({"label": "x\ny"}, [("{'label': 'x\\ny'}", REASON_INVALID_LABEL)]),
        ({"label": "report."}, [("'docList:report.'", REASON_AMBIGUOUS)]),
        ({"label": "a docItem:b"}, [("'docList:a docItem:b'", REASON_AMBIGUOUS)]),
        ({"ref": "nothing here"}, [("'nothing here'", REASON_NOT_A_REFERENCE)]),
        ({"ref": ""}, [("''", REASON_EMPTY)]),
    ],
)
def test_dict_rejections(value: dict[str, Any], rejected: list[tuple[str, str]]) -> None:
    assert parse(value) == ([], rejected)


def test_dict_label_is_taken_as_is_apart_from_surrounding_whitespace() -> None:
    assert parse({"label": " writeFile:a b.md\n"}) == (["docList:writeFile:a b.md"], [])


# --------------------------------------------------------------------------- other inputs


def test_reference_objects_and_lists_pass_through() -> None:
    previous = DocumentReferenceList(
        (DocumentItemReference("a1"), FileReference("f1")),
        (RejectedReference("'x'", REASON_NOT_A_REFERENCE),),
    )
    assert parse([previous, DocumentListReference("writeFile:a.md")]) == (
        ["docItem:a1", "file:f1", "docList:writeFile:a.md"],
        [("'x'", REASON_NOT_A_REFERENCE)],
    )


def test_reference_object_with_a_non_canonical_field_is_rejected() -> None:
    assert parse(DocumentItemReference("a b")) == ([], [("'docItem:a b'", REASON_AMBIGUOUS)])


def test_bytes_are_read_as_utf8() -> None:
    assert parse([b"docItem:a1", b"\xff"]) == (
        ["docItem:a1"],
        [("b'\\xff'", REASON_UNSUPPORTED_TYPE)],
    )


def test_sets_and_objects_are_unsupported() -> None:
    assert parse([{"docItem:a1"}, object]) == (
        [],
        [
            ("{'docItem:a1'}", REASON_UNSUPPORTED_TYPE),
            ("<class 'object'>", REASON_UNSUPPORTED_TYPE),
        ],
    )


def test_order_is_kept_across_shapes() -> None:
    value = ["docItem:c3", {"id": "a1"}, "file:f1 docItem:b2", {"documents": ["docItem:a1"]}]
    assert parse(value) == (["docItem:c3", "docItem:a1", "file:f1", "docItem:b2"], [])


def test_ids_keep_their_case_and_differ_by_case() -> None:
    assert parse(["docItem:AbC", "docItem:abc"]) == (["docItem:AbC", "docItem:abc"], [])


def test_duplicate_rejections_are_dropped() -> None:
    assert parse([None, None, 7, 7]) == (
        [],
        [("None", REASON_NULL), ("7", REASON_NUMBER_NOT_ALLOWED)],
    )


# --------------------------------------------------------------------------- robustness


def test_cyclic_list_is_rejected_and_the_rest_read() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    cyclic.append("docItem:a1")
    assert parse(cyclic) == (
        ["docItem:a1"],
        [("[[[...], 'docItem:a1'], 'docItem:a1']", REASON_CYCLIC)],
    )


def test_cyclic_dict_is_rejected_and_the_rest_read() -> None:
    cyclic: dict[str, object] = {}
    cyclic["documents"] = [cyclic, "docItem:b2"]
    assert parse(cyclic) == (
        ["docItem:b2"],
        [("{'documents': [{...}, 'docItem:b2']}", REASON_CYCLIC)],
    )


def test_nesting_past_the_limit_is_too_deep() -> None:
    value: object = "docItem:a1"
    for _ in range(MAX_DEPTH):
        value = [value]
    assert parse(value) == (["docItem:a1"], [])
    assert parse([value]) == ([], [("'docItem:a1'", REASON_TOO_DEEP)])


class _Broken:
    """Every dunder a parser might touch raises."""

    def __str__(self) -> str:
        raise RuntimeError("str")

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise RuntimeError("class")


class _BrokenStr(str):
    __slots__ = ()

    def __str__(self) -> str:
        raise RuntimeError("str")

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def __len__(self) -> int:
        raise RuntimeError("len")

    def __getitem__(self, index: object) -> str:
        raise RuntimeError("getitem")

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("strip")


class _BrokenList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise RuntimeError("iter")

    def __len__(self) -> int:
        raise RuntimeError("len")

    def __getitem__(self, index: object) -> Any:
        raise RuntimeError("getitem")


class _BrokenDict(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items")

    def __iter__(self) -> Any:
        raise RuntimeError("iter")

    def __getitem__(self, key: object) -> Any:
        raise RuntimeError("getitem")


def test_broken_objects_are_rejected_as_unreadable() -> None:
    assert parse([_Broken(), "docItem:a1"]) == (
        ["docItem:a1"],
        [("<unreadable _Broken>", REASON_UNREADABLE)],
    )


def test_subclasses_with_broken_methods_are_read_by_their_contents() -> None:
    value = _BrokenList(
        [_BrokenStr("docItem:a1"), _BrokenDict(documents=[_BrokenStr("b2 file:f1")])]
    )
    assert parse(value) == (["docItem:a1", "file:f1"], [])


def test_control_characters_and_surrogates_are_safe() -> None:
    assert parse(["docItem:a1\x00", "\ud800", "docItem:b2\x1b[0m"]) == (
        ["docItem:a1", "docItem:b2"],
        [("'\\ud800'", REASON_NOT_A_REFERENCE)],
    )


def test_huge_string_is_rejected_unread() -> None:
    huge = "docItem:a1 " + "x" * (10 * 1024 * 1024)
    assert parse(huge) == ([], [("'docItem:a1 " + "x" * 65 + "...", REASON_TOO_LONG)])


def test_string_at_the_length_limit_is_read() -> None:
    text = "docItem:a1 " + "x" * (MAX_TEXT_LENGTH - 11)
    assert parse(text) == (["docItem:a1"], [])


def test_ten_thousand_deep_list_returns_too_deep() -> None:
    value: object = ["docItem:a1"]
    for _ in range(10_000):
        value = [value]
    assert parse(value) == ([], [("[[[...]]]", REASON_TOO_DEEP)])


def test_deeply_nested_json_text_is_not_decoded() -> None:
    text = "[" * 50_000 + "]" * 50_000
    refs, rejected = parse(text)
    assert refs == []
    assert rejected == [("'" + "[" * 76 + "...", REASON_NOT_A_REFERENCE)]


def test_reference_budget_stops_reading() -> None:
    value = [f"docItem:x{i}" for i in range(MAX_REFERENCES + 5)]
    refs, rejected = parse(value)
    assert refs == [f"docItem:x{i}" for i in range(MAX_REFERENCES)]
    assert rejected == [(f"'docItem:x{MAX_REFERENCES}'", REASON_TOO_MANY_ITEMS)]


def test_value_budget_stops_reading() -> None:
    value = [None] * (MAX_VALUES + 10)
    assert parse(value) == ([], [("None", REASON_NULL), ("None", REASON_TOO_MANY_ITEMS)])


def test_rejections_beyond_the_cap_are_summed_up() -> None:
    value = [f"word{i}" for i in range(MAX_REJECTED + 7)]
    refs, rejected = parse(value)
    assert refs == []
    assert rejected[:MAX_REJECTED] == [
        (f"'word{i}'", REASON_NOT_A_REFERENCE) for i in range(MAX_REJECTED)
    ]
    assert rejected[MAX_REJECTED:] == [("<7 more rejected inputs>", REASON_TOO_MANY_ITEMS)]


def test_raw_is_short_and_printable() -> None:
    result = coerce_document_references(["\x00\x01" * 200])
    (rejected,) = result.rejected
    assert rejected.reason == REASON_NOT_A_REFERENCE
    assert len(rejected.raw) == MAX_RAW_LENGTH
    assert rejected.raw.isprintable()
    assert rejected.raw.startswith("'\\x00\\x01\\x00")


def test_every_reason_constant_is_listed_and_distinct() -> None:
    names = [name for name in dir(parsing) if name.startswith("REASON_")]
    values = [getattr(parsing, name) for name in names]
    assert len(set(values)) == len(values) == 16
    assert set(values) == REASONS


def test_listed_words_that_are_no_reference_are_rejected() -> None:
    assert parse("docItem:a1, bogus") == (["docItem:a1"], [("'bogus'", REASON_NOT_A_REFERENCE)])
    assert parse("docItem:a1\ndata.csv\n") == (
        ["docItem:a1"],
        [("'data.csv'", REASON_NOT_A_REFERENCE)],
    )
    assert parse("Here are the documents:\n- docItem:a1\n- docItem:b2") == (
        ["docItem:a1", "docItem:b2"],
        [],
    )


# -- issue 17 kind 7


def test_tool_result_block_reads_as_its_docitem_only() -> None:
    other = "9a2b8c1e-1111-4222-8333-444455556666"
    text = f"Wrote 'a.txt' (5 bytes)\n  documentList ref: docItem:{UUID}\n  file id: {other}"
    assert parse(text) == ([f"docItem:{UUID}"], [])


def test_file_id_line_without_docitem_reads_as_a_file_reference() -> None:
    assert parse(f"Wrote 'a.txt' (5 bytes)\n  file id: {UUID}") == ([f"file:{UUID}"], [])
    assert parse("fileId: f1, docItem:a1") == (["file:f1", "docItem:a1"], [])


def test_courtesy_and_exclaimed_words_are_prose() -> None:
    assert parse("docItem:a1; thanks!") == (["docItem:a1"], [])
    assert parse("docItem:a1, docItem:b2; thanks") == (["docItem:a1", "docItem:b2"], [])
    assert parse("docItem:a1\nAnything else?") == (["docItem:a1"], [])
    assert parse("docItem:a1, bogus") == (["docItem:a1"], [("'bogus'", REASON_NOT_A_REFERENCE)])


def test_wrapped_ids_have_no_empty_id_rejection() -> None:
    assert parse(f"docItem:{{{UUID}}}") == ([f"docItem:{UUID}"], [])
    assert parse("see docItem:<a1> and docItem:(b2)") == (["docItem:a1", "docItem:b2"], [])
    assert parse("docItem:{a1>") == ([], [("'docItem:{a1>'", REASON_INVALID_ID)])


def test_bare_uuid_is_marked_bare_and_prefixed_one_is_not() -> None:
    bare = coerce_document_references(UUID).references[0]
    prefixed = coerce_document_references(f"docItem:{UUID}").references[0]
    assert bare == prefixed
    assert isinstance(bare, DocumentItemReference) and bare.bare
    assert isinstance(prefixed, DocumentItemReference) and not prefixed.bare


def test_a_file_name_that_looks_like_a_reference_in_a_tool_result_is_skipped() -> None:
    text = f"Wrote 'docItem:evil.txt' (5 bytes)\n  documentList ref: docItem:{UUID}\n  file id: f1"
    assert parse(text) == ([f"docItem:{UUID}"], [])
    no_block = "Wrote 'docItem:evil.txt' (5 bytes)"
    assert parse(no_block) == (["docItem:evil.txt"], [])
