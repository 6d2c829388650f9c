"""Tools over the embedded default: SQLite metadata and local-disk blobs (SPEC C10, section 5)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from docbinder.application import DocBinder
from docbinder.config import Settings
from docbinder.container import build_binder
from docbinder.domain.errors import Conflict, SizeLimitExceeded
from docbinder.domain.model import Principal
from docbinder.tools import (
    persist_task_result,
    read_file,
    replace_in_file,
    search_in_file_content,
    write_file,
)

ALICE = Principal("alice", "m1", "f1", roles=("member",))


@pytest.fixture
def binder(tmp_path: Path) -> DocBinder:
    settings = Settings.load(
        {
            "home": str(tmp_path),
            "database_url": f"sqlite:///{tmp_path / 'docbinder.db'}",
            "blob_url": (tmp_path / "blobs").as_uri(),
            "max_file_size": 1000,
        },
        environ={},
    )
    return build_binder(settings)


def blob_keys_match_file_items(binder: DocBinder) -> bool:
    with binder.uow_factory() as uow:
        referenced = {item.blob_key for item in uow.maintenance.iter_files()}
    return set(binder.blobs.keys()) == referenced


def test_append_and_replace_switch_blobs_atomically(binder: DocBinder) -> None:
    run = binder.start_new_run(ALICE)
    created = write_file(run, "notes.md", "alpha\n").files[0]

    appended = write_file(run, "notes.md", "beta\n", mode="append", file_id=created.item.id)
    replaced = replace_in_file(run, created.item.id, "beta", "gamma")

    item = replaced.item
    assert (
        appended.text == f"Appended 5 bytes to 'notes.md' (11 bytes)\n  file id: {created.item.id}"
    )
    assert item.sha256 == hashlib.sha256(b"alpha\ngamma\n").hexdigest()
    assert binder.get_file(ALICE, created.item.id) == item
    assert blob_keys_match_file_items(binder)  # no orphan, no missing blob
    assert read_file(run, created.item.id) == "alpha\ngamma\n"
    assert run.get_content(created.reference).parts[0].text == "alpha\ngamma\n"
    assert [m.line_number for m in search_in_file_content(run, "GAMMA")] == [2]


def test_failed_appends_change_nothing(binder: DocBinder) -> None:
    run = binder.start_new_run(ALICE)
    short = write_file(run, "n.txt", "ab").files[0].item
    write_file(run, "n.txt", "abc")
    with pytest.raises(Conflict):
        write_file(run, "n.txt", "c", mode="append", file_id=short.id)
    with pytest.raises(SizeLimitExceeded):
        write_file(run, "n.txt", "x" * 999, mode="append", file_id=short.id)
    assert binder.get_file(ALICE, short.id) == short
    assert blob_keys_match_file_items(binder)


def test_task_result_on_sqlite(binder: DocBinder) -> None:
    run = binder.start_new_run(ALICE)
    result = persist_task_result(run, [("a.txt", b"A"), ("b.txt", b"B")], label="task:1")
    assert result.message is not None
    assert [p.text for p in run.get_content("docList:task:1").parts] == ["A", "B"]
    assert run.workflow is not None
    [stored] = binder.list_messages(ALICE, run.workflow.id)
    assert [d.file_name for d in stored.documents] == ["a.txt", "b.txt"]
