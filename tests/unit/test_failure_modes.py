"""One test per row of SPEC section 4: the product behaviour and its log line."""

from __future__ import annotations

import logging

import pytest

from docbinder.application import DocBinder, UnresolvedReason
from docbinder.domain.model import ContentKind, FileItem, Principal


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_no_workflow_available(
    binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
) -> None:
    """A consuming tool resolving without a bound workflow gets no_active_workflow for every reference."""
    produced = binder.start_new_run(u1).produce_file("a.txt", b"a")
    unbound = binder.start_run(u1)
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        resolution = unbound.resolve([produced.reference, "docList:x", f"file:{produced.item.id}"])
    assert resolution.documents == ()
    assert [u.reason for u in resolution.unresolved] == [UnresolvedReason.NO_ACTIVE_WORKFLOW] * 3
    assert _warnings(caplog) == [
        "no workflow available: 3 reference(s) unresolved (no_active_workflow) for user u1"
    ]


def test_zero_content_parts_after_download(
    binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
) -> None:
    """A successful download always yields a ChatDocument whose content reaches the consuming tool."""
    run = binder.start_new_run(u1)
    produced = run.produce_file(
        "platform-overview.html",
        b"<h1>Overview</h1><p>Agents</p>",
        verb="Downloaded",
        label="datasource:web",
    )
    content = run.get_content([produced.reference])
    assert [p.kind for p in content.parts] == [ContentKind.TEXT]
    assert "Overview" in (content.parts[0].text or "")
    # and when nothing resolves, the answer and the log say why, per reference
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        empty = run.get_content(["docItem:00000000-0000-4000-8000-000000000000"])
    assert empty.parts == ()
    assert [u.reason for u in empty.unresolved] == [UnresolvedReason.NOT_IN_WORKFLOW]
    assert any(
        m.startswith(
            "0 content parts from 1 reference(s): docItem:00000000-0000-4000-8000-000000000000 (not_in_workflow)"
        )
        for m in _warnings(caplog)
    )


def test_invalid_document_list_type_dict(
    binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
) -> None:
    """A dict-shaped documentList goes through the tolerant parser like every other shape."""
    run = binder.start_new_run(u1)
    produced = run.produce_file("a.txt", b"a")
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        resolution = run.resolve({"documents": [{"id": produced.document_id, "name": "a.txt"}]})
        content = run.get_content({"documents": [{"id": produced.document_id}]})
    assert [d.document.id for d in resolution.documents] == [produced.document_id]
    assert [p.text for p in content.parts] == ["a"]
    assert _warnings(caplog) == []


def test_listing_files_returns_entities(binder: DocBinder, u1: Principal) -> None:
    """Listing gives FileItem objects with attribute access, never dicts."""
    run = binder.start_run(u1)
    run.store_file("one.txt", b"1")
    run.store_file("two.txt", b"2")
    listed = run.list_files()
    assert all(isinstance(i, FileItem) for i in listed)
    assert sorted(i.file_name for i in listed) == ["one.txt", "two.txt"]


def test_file_not_found_right_after_duplicate_detected(
    binder: DocBinder, caplog: pytest.LogCaptureFixture
) -> None:
    """The ghost duplicate: a candidate from another feature instance is never handed back."""
    f1 = Principal("u1", "m1", "f1")
    f2 = Principal("u1", "m1", "f2")
    binder.start_run(f1).store_file("q3.pdf", b"%PDF-1.4 x")
    # Same user, same mandate, same bytes and name, other feature instance.
    with caplog.at_level(logging.INFO, logger="docbinder"):
        stored = binder.start_run(f2).store_file("q3.pdf", b"%PDF-1.4 x")
    assert not stored.duplicate
    assert binder.get_file(f2, stored.item.id) == stored.item  # no "File with ID ... not found"
    assert not any("duplicate detected" in r.getMessage() for r in caplog.records)
    # Within the same scope the duplicate is found, logged, and readable.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="docbinder"):
        again = binder.start_run(f2).store_file("q3.pdf", b"%PDF-1.4 x")
    assert again.duplicate and again.item.id == stored.item.id
    assert binder.get_file(f2, again.item.id) == stored.item
    assert any(r.getMessage().startswith("duplicate detected for user u1") for r in caplog.records)
