"""The async facade cannot drift from the sync one: same methods, same parameters (ADR 0049).

Every public method of :class:`Run` has an ``async`` twin on :class:`AsyncRun` with the
same parameters (names, kinds, defaults, annotations), and every public method of
``AsyncRun`` has its sync twin on ``Run``. ``AsyncDocBinder`` mirrors the binder's
entry points and use cases it offers; each of its methods either mirrors one (same
parameters) or is declared async-only below.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from docbinder.application.aio import AsyncDocBinder, AsyncFileData, AsyncRun
from docbinder.application.binder import DocBinder, FileContentUpdates, Run
from docbinder.application.steps.hashing import FileData
from docbinder.application.use_cases.check_duplicate import CheckDuplicate
from docbinder.application.use_cases.collect_garbage import CollectGarbage
from docbinder.application.use_cases.create_workflow import CreateWorkflow
from docbinder.application.use_cases.delete_file import DeleteFile
from docbinder.application.use_cases.get_file import GetFile
from docbinder.application.use_cases.get_workflow import GetWorkflow
from docbinder.application.use_cases.list_files import ListFiles
from docbinder.application.use_cases.list_messages import ListMessages
from docbinder.application.use_cases.list_workflows import ListWorkflows
from docbinder.application.use_cases.open_file import OpenFile
from docbinder.application.use_cases.store_file import StoreFile

ASYNC_TYPES = {"AsyncFileData": "FileData", "AsyncChunks": "BlobReader", "AsyncRun": "Run"}
"""What the async facade takes or returns in place of the sync type (annotations as written)."""

BINDER_MIRRORS: dict[str, Callable[..., Any]] = {
    "start_run": DocBinder.start_run,
    "start_new_run": DocBinder.start_new_run,
    "aclose": DocBinder.close,
    "store_file": StoreFile.__call__,
    "check_duplicate": CheckDuplicate.__call__,
    "get_file": GetFile.__call__,
    "open_file": OpenFile.__call__,
    "list_files": ListFiles.__call__,
    "delete_file": DeleteFile.__call__,
    "append_file": FileContentUpdates.append,
    "replace_file": FileContentUpdates.replace,
    "create_workflow": CreateWorkflow.__call__,
    "get_workflow": GetWorkflow.__call__,
    "workflow_messages": ListMessages.__call__,
    "list_workflows": ListWorkflows.__call__,
    "collect_garbage": CollectGarbage.__call__,
}
"""AsyncDocBinder method -> the sync callable it awaits in a worker thread."""

ASYNC_BINDER_ONLY = {
    "wrap_run",  # an AsyncRun over an existing sync Run
    "read_file",  # the whole bytes, joined from the async chunks of open_file
}
"""AsyncDocBinder methods with no one sync twin."""


def _methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def _properties(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and isinstance(member, property)
    }


def _as_sync(annotation: object) -> object:
    if not isinstance(annotation, str):
        return annotation
    for async_type, sync_type in ASYNC_TYPES.items():
        annotation = annotation.replace(async_type, sync_type)
    return annotation


def _shape(func: Callable[..., Any]) -> list[tuple[str, object, object, object]]:
    """``(name, kind, default, annotation)`` of every parameter but ``self``."""
    params = list(inspect.signature(func).parameters.values())[1:]
    return [(p.name, p.kind, p.default, _as_sync(p.annotation)) for p in params]


def test_every_run_method_has_an_async_twin_and_every_async_method_a_sync_one() -> None:
    sync, aio = _methods(Run), _methods(AsyncRun)
    assert sorted(set(sync) - set(aio)) == [], "Run methods without an AsyncRun twin"
    assert sorted(set(aio) - set(sync)) == [], "AsyncRun methods without a Run twin"
    for name, method in sync.items():
        twin = aio[name]
        assert not inspect.iscoroutinefunction(method), name
        assert inspect.iscoroutinefunction(twin), f"AsyncRun.{name} is not async"
        assert _shape(twin) == _shape(method), f"AsyncRun.{name} takes other parameters"
        returns = inspect.signature(method).return_annotation
        assert _as_sync(inspect.signature(twin).return_annotation) == returns, name
    # The read-only state is the same too (each facade's ``binder`` is its own).
    assert _properties(AsyncRun) == _properties(Run) - {"binder"}


def test_the_async_binder_mirrors_the_binder_where_it_offers_the_same_call() -> None:
    methods = _methods(AsyncDocBinder)
    unexplained = set(methods) - set(BINDER_MIRRORS) - ASYNC_BINDER_ONLY
    assert sorted(unexplained) == [], "AsyncDocBinder methods that mirror nothing declared"
    assert set(BINDER_MIRRORS) <= set(methods)
    for name, sync in BINDER_MIRRORS.items():
        twin = methods[name]
        assert inspect.iscoroutinefunction(twin), f"AsyncDocBinder.{name} is not async"
        assert _shape(twin) == _shape(sync), f"AsyncDocBinder.{name} takes other parameters"


class _Sync:
    def call(self, a: int, *, b: str = "x") -> int:
        return a

    def upload(self, data: FileData) -> int:
        return 0


class _DroppedKeyword:
    async def call(self, a: int) -> int:
        return a


class _KeywordMadePositional:
    async def call(self, a: int, b: str = "x") -> int:
        return a


class _OtherType:
    async def upload(self, data: bytes) -> int:
        return 0


class _Twin:
    async def call(self, a: int, *, b: str = "x") -> int:
        return a

    async def upload(self, data: AsyncFileData) -> int:
        return 0


@pytest.mark.parametrize(
    ("name", "drifted"),
    [("call", _DroppedKeyword), ("call", _KeywordMadePositional), ("upload", _OtherType)],
)
def test_the_check_sees_a_drifted_twin(name: str, drifted: type) -> None:
    """A dropped keyword, a keyword made positional or another type is a drift."""
    assert _shape(getattr(_Sync, name)) != _shape(getattr(drifted, name))
    assert _shape(getattr(_Sync, name)) == _shape(getattr(_Twin, name))


def test_the_sync_twins_of_the_async_run_calls_work() -> None:
    """``Run.append_file``, ``replace_file``, ``messages`` and ``delete_file`` do what their twins do."""
    from docbinder import (
        Conflict,
        FileItemNotFound,
        FileStillReferenced,
        NoActiveWorkflow,
        Principal,
    )
    from docbinder.container import build_binder

    user = Principal("u1", "m1", "f1", roles=("member",))
    with build_binder(database_url="memory://", blob_url="memory://") as binder:
        run = binder.start_new_run(user)
        produced = run.produce_file("a.txt", b"one", label="writeFile:a.txt")
        file_id = produced.item.id
        assert run.append_file(file_id, b" two").item.size == len(b"one two")
        with pytest.raises(Conflict, match="changed since it was read"):
            run.replace_file(file_id, b"x", expected=produced.item)  # not the current content
        run.replace_file(file_id, b"three")
        assert run.read_file(file_id) == b"three"
        assert [m.documents_label for m in run.messages()] == ["writeFile:a.txt"]
        with pytest.raises(FileStillReferenced):
            run.delete_file(file_id)
        assert run.delete_file(file_id, force=True).id == file_id
        with pytest.raises(FileItemNotFound):
            run.get_file(file_id)
        with pytest.raises(NoActiveWorkflow):
            binder.start_run(user).messages()
