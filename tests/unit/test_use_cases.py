"""Each use case is a callable with one entry point, in a module a reader finds (ADR 0025, 0048)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder import DocBinder, Principal, build_binder
from docbinder.application.binder import FileContentUpdates, FileVersions
from tests.wiring import USE_CASE_NAMES

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"

U1 = Principal("u1", "m1", "f1", roles=("member",))

COMPOSED_STEPS = {
    "CheckDuplicate": {"choose"},  # the duplicate rule the store path applies (ADR 0048)
    "AttachFile": {"prepare"},  # the attach other use cases run inside their own unit
}
"""The one step each use case that other use cases compose offers beside ``__call__``."""


@pytest.fixture
def binder() -> Iterator[DocBinder]:
    with build_binder(database_url="memory://", blob_url="memory://") as binder:
        yield binder


def _use_cases(binder: DocBinder) -> dict[str, object]:
    found = {name: getattr(binder, name) for name in sorted(USE_CASE_NAMES)}
    assert all(use_case is not None for use_case in found.values())
    return found


def _public_members(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def test_every_use_case_has_one_public_entry_point(binder: DocBinder) -> None:
    for name, use_case in _use_cases(binder).items():
        cls = type(use_case)
        assert callable(use_case), name
        assert _public_members(cls) == COMPOSED_STEPS.get(cls.__name__, set()), (
            f"{cls.__name__} ({name}) should have __call__ as its only public entry point"
        )


def test_the_store_path_decides_duplicates_with_check_duplicate(
    binder: DocBinder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``store_file`` and ``produce_file`` reuse a duplicate only as ``CheckDuplicate`` decides."""
    run = binder.start_new_run(U1)
    first = run.produce_file("a.txt", b"alpha")
    asked: list[list[str]] = []
    choose = binder.check_duplicate.choose

    def counting(principal: Principal, file_name: str, candidates: list[object]) -> object:
        asked.append([getattr(c, "id", "?") for c in candidates])
        return choose(principal, file_name, candidates)  # type: ignore[arg-type]

    monkeypatch.setattr(binder.check_duplicate, "choose", counting)
    assert run.produce_file("a.txt", b"alpha").duplicate
    assert run.store_file("a.txt", b"alpha").duplicate
    assert asked == [[first.item.id], [first.item.id]]

    # The rule's answer is what the store does: a rule that finds no usable
    # duplicate makes the store keep a fresh copy.
    from docbinder.application.use_cases.check_duplicate import DuplicateCheck

    monkeypatch.setattr(
        binder.check_duplicate, "choose", lambda *_args: DuplicateCheck(None, key_taken=True)
    )
    fresh = run.store_file("a.txt", b"alpha")
    assert not fresh.duplicate and fresh.item.id != first.item.id


def test_every_attach_runs_the_one_attach_file(
    binder: DocBinder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run.attach, persist_action_result and produce_file all go through ``AttachFile``."""
    run = binder.start_new_run(U1)
    stored = run.store_file("a.txt", b"alpha")
    labels: list[str] = []
    prepare = binder.attach_file.prepare

    def watching(ctx: object, *, label: str, **kwargs: object) -> object:
        labels.append(label)
        return prepare(ctx, label=label, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(binder.attach_file, "prepare", watching)
    run.attach(stored, label="one")
    run.persist_action_result([stored], label="several")
    produced = run.produce_file("b.txt", b"beta", label="produced")
    assert run.attach_safely(stored, label="safe") is not None
    assert labels == ["one", "several", "produced", "safe"]
    assert produced.document_id is not None
    messages = binder.list_messages(U1, run.context.require_workflow("test").id)
    assert [m.documents_label for m in messages] == labels

    # Refused up front, the producer still stores its file and logs why (SPEC C3).
    def refusing(*_args: object, **_kwargs: object) -> object:
        from docbinder.domain.errors import AccessDenied

        raise AccessDenied("no")

    monkeypatch.setattr(binder.attach_file, "prepare", refusing)
    alone = run.produce_file("c.txt", b"gamma")
    assert alone.document_id is None and binder.get_file(U1, alone.item.id) == alone.item


def test_the_architecture_page_names_every_use_case_and_its_module(binder: DocBinder) -> None:
    architecture = ARCHITECTURE.read_text(encoding="utf-8")
    for name, use_case in _use_cases(binder).items():
        cls = type(use_case)
        module_file = cls.__module__.rsplit(".", 1)[1] + ".py"
        assert f"`{cls.__name__}`" in architecture, name
        assert f"`{module_file}`" in architecture, name


def test_the_grouped_api_delegates_to_the_use_cases(binder: DocBinder) -> None:
    """``binder.update_file`` and ``binder.versions`` answer what the use cases answer."""
    assert isinstance(binder.update_file, FileContentUpdates)
    assert isinstance(binder.versions, FileVersions)
    # Facades live with DocBinder; the work is in the use cases they hold.
    assert FileContentUpdates.__module__ == FileVersions.__module__ == DocBinder.__module__
    item = binder.store_file(U1, "notes.md", b"one").item
    assert binder.update_file.load_for_update(U1, item.id) == binder.get_file_for_update(
        U1, item.id
    )
    appended = binder.update_file.append(U1, item.id, b" two")
    assert appended.size_change == 4
    with binder.open_file(U1, item.id) as chunks:
        assert b"".join(chunks) == b"one two"
    replaced = binder.update_file.replace(U1, item.id, b"three", expected=appended.item)
    assert replaced.previous == appended.item and replaced.item.size == 5

    first = binder.versions.save(U1, "plan.md", b"v0", namespace="ns")
    second, hooked = binder.versions.save_with(
        U1, "plan.md", b"v1", namespace="ns", then=lambda _uow, stored: stored.number
    )
    assert (first.number, second.number, hooked) == (0, 1, 1)
    assert binder.versions.latest(U1, "plan.md", "ns") == binder.get_latest_file_version(
        U1, "plan.md", "ns"
    )
    assert binder.versions.get(U1, "plan.md", 0, "ns") == first
    assert binder.versions.list(U1, "plan.md", "ns") == [first, second]
    assert binder.versions.latest_of_each(U1, "ns") == [second]
    assert binder.versions.names(U1, "ns") == ["plan.md"]
    assert binder.versions.read(U1, first) == b"v0"
    with binder.versions.open(U1, second, chunk_size=1) as chunks:
        assert list(chunks) == [b"v", b"1"]
    assert binder.versions.series(U1, "plan.md", "ns") == second.version.series
    assert binder.versions.delete(U1, "plan.md", "ns") == 2
    assert binder.list_file_versions(U1, "plan.md", "ns") == []


def test_docbinder_exports_every_error_the_domain_raises() -> None:
    """The Python API guide says ``docbinder`` exports the errors: a host catches ``docbinder.Conflict``."""
    import inspect

    import docbinder
    from docbinder.domain import errors

    raised = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, errors.DocbinderError)
        and value.__module__ == errors.__name__
        and not name.startswith("_")
    }
    missing = sorted(
        name for name in raised if getattr(docbinder, name, None) is not getattr(errors, name)
    )
    assert missing == []
