"""Same input, same answer (issue 31, kind 7): lookups of ids no entity can have.

An id with NUL, a lone surrogate, whitespace or more than 128 characters names no
FileItem or workflow on any backend (``is_valid_id``): every lookup answers the same
``NotFound`` on memory, SQLite, PostgreSQL and MariaDB, before any backend is asked
(PostgreSQL refuses NUL in a parameter, SQLite and the MariaDB driver cannot encode a
lone surrogate). A version name no file can have is the one documented ``InvalidInput`` of a file name everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application.binder import DocBinder
from docbinder.domain.errors import FileItemNotFound, InvalidInput, NotFound, WorkflowNotFound
from docbinder.domain.model import Principal
from tests.wiring import wire_binder

ALICE = Principal("alice", "m1", roles=("member",))
BACKENDS = ["memory", "sqlite", "postgresql", "mariadb"]

IMPOSSIBLE_IDS = [
    "f\x00" + "0" * 35,  # the example
    "\x00",
    "f\ud800",  # a lone surrogate
    "\udcff" * 3,  # what a non-UTF-8 argv byte decodes to
    "a" * 129,  # one character over the longest id
    "a" * 100_000,
    "",
    " f",
    "f\n",
]


@pytest.fixture(params=BACKENDS)
def binder(request: pytest.FixtureRequest, tmp_path: Path) -> DocBinder:
    if request.param == "memory":
        store = MemoryMetadataStore()
        return wire_binder(store.unit_of_work, MemoryBlobStore(), store.unit_of_work)
    backend = request.getfixturevalue(f"{request.param}_backend")
    backend.clean()
    return wire_binder(
        backend.store.unit_of_work,
        LocalDiskBlobStore(tmp_path / "blobs"),
        backend.store.read_unit_of_work,
    )


def _outcome(call: Callable[[], Any]) -> str:
    try:
        call()
    except NotFound as exc:
        return type(exc).__name__
    except Exception as exc:  # the answer under test: any other error is a finding
        return f"unexpected {type(exc).__name__}: {exc}"
    return "no error"


@pytest.mark.parametrize("bad", IMPOSSIBLE_IDS, ids=repr)
def test_a_file_id_no_item_can_have_is_not_found_everywhere(binder: DocBinder, bad: str) -> None:
    run = binder.start_new_run(ALICE)
    run.store_file("kept.txt", b"kept")
    lookups: dict[str, Callable[[], Any]] = {
        "run.get_file": lambda: run.get_file(bad),
        "run.open_file": lambda: run.open_file(bad).close(),
        "binder.delete_file": lambda: binder.delete_file(ALICE, bad, force=True),
        "binder.count_file_references": lambda: binder.count_file_references(ALICE, bad),
        "update_file.append": lambda: binder.update_file.append(ALICE, bad, b"x"),
        "update_file.load_for_update": lambda: binder.update_file.load_for_update(ALICE, bad),
    }
    outcomes = {name: _outcome(call) for name, call in lookups.items()}
    assert outcomes == dict.fromkeys(lookups, FileItemNotFound.__name__)


@pytest.mark.parametrize("bad", IMPOSSIBLE_IDS, ids=repr)
def test_a_workflow_id_no_workflow_can_have_is_not_found_everywhere(
    binder: DocBinder, bad: str
) -> None:
    binder.start_new_run(ALICE)
    lookups: dict[str, Callable[[], Any]] = {
        "binder.start_run": lambda: binder.start_run(ALICE, bad),
        "binder.list_messages": lambda: binder.list_messages(ALICE, bad),
    }
    outcomes = {name: _outcome(call) for name, call in lookups.items()}
    assert outcomes == dict.fromkeys(lookups, WorkflowNotFound.__name__)


@pytest.mark.parametrize(
    "bad", ["n\x00", "n\ud800", "", "a" * 100_000], ids=lambda b: ascii(b)[:20]
)
def test_a_version_name_no_file_can_have_is_one_validation_error_everywhere(
    binder: DocBinder, bad: str
) -> None:
    """Names are checked as names (the documented ``InvalidInput`` of a file name)."""
    binder.versions.save(ALICE, "notes.md", b"v1")
    lookups: dict[str, Callable[[], Any]] = {
        "list": lambda: binder.versions.list(ALICE, bad),
        "latest": lambda: binder.versions.latest(ALICE, bad),
        "get": lambda: binder.versions.get(ALICE, bad, 1),
        "delete": lambda: binder.versions.delete(ALICE, bad),
    }
    outcomes = {}
    for name, call in lookups.items():
        with pytest.raises(InvalidInput) as refused:
            call()
        outcomes[name] = str(refused.value).startswith("file name ")
    assert outcomes == dict.fromkeys(lookups, True)
    assert [v.version.series.name for v in binder.versions.latest_of_each(ALICE)] == ["notes.md"]


def _answers(binder: DocBinder, bad: str) -> list[tuple[str, str]]:
    run = binder.start_new_run(ALICE)
    kept = run.produce_file("kept.txt", b"kept").item
    references = [f"docItem:{bad}", f"file:{bad}", f"docList:{bad}", bad]
    resolution = run.resolve(references)
    content = run.get_content(references)
    assert not resolution.documents and not content.documents
    assert run.get_content([f"file:{kept.id}"]).documents  # the good one still reads
    return sorted(
        (type(u.reference).__name__ if u.reference is not None else "-", u.reason.value)
        for u in [*resolution.unresolved, *content.unresolved]
    )


@pytest.mark.parametrize("bad", IMPOSSIBLE_IDS, ids=lambda b: ascii(b)[:20])
def test_references_to_impossible_ids_are_unresolved_alike_everywhere(
    binder: DocBinder, bad: str
) -> None:
    """``resolve`` and ``get_content`` never raise for them, and every backend gives the
    answer the memory backend gives."""
    store = MemoryMetadataStore()
    memory = wire_binder(store.unit_of_work, MemoryBlobStore(), store.unit_of_work)
    expected = _answers(memory, bad)
    assert expected and {reason for _, reason in expected} <= {"rejected_input", "not_in_workflow"}
    assert _answers(binder, bad) == expected
