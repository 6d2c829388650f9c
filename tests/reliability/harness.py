"""Fault injection, invariant checks and CLI helpers for the reliability tests.

Faults are injected through wrappers around the ports (a unit-of-work factory
whose units and repositories raise at a chosen call, a blob-store wrapper) and,
for adapter internals (``os.write``/``os.replace``/``fsync`` on local disk, S3
client calls), through ``monkeypatch``. Every injection point reports to one
:class:`FaultPlan`, which counts calls per point and fires the armed faults.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import attrs
from typer.testing import CliRunner, Result

from docbinder.application import DocBinder
from docbinder.cli.main import app
from docbinder.domain.errors import StorageError
from docbinder.domain.model import FileItem
from docbinder.ports.blobs import BlobReader, BlobStat, BlobStore, Chunks
from docbinder.ports.metadata import (
    FileRepository,
    InlineBlobRepository,
    MaintenanceRepository,
    UnitOfWork,
    UnitOfWorkFactory,
    VersionRepository,
    WorkflowRepository,
)
from tests.wiring import UnitOfWorkWrapper, wire_binder

# ----------------------------------------------------------------------------- the ledger


@attrs.define
class Ledger:
    """Figures of one test session: faults injected and survived, hostile inputs tried, load."""

    injected: Counter[str] = attrs.field(factory=Counter)
    survived: Counter[str] = attrs.field(factory=Counter)
    hostile: Counter[str] = attrs.field(factory=Counter)
    load: list[str] = attrs.field(factory=list)

    def lines(self) -> list[str]:
        """Human-readable summary lines (empty when nothing was recorded)."""
        out: list[str] = []
        if self.injected:
            out.append(
                f"faults injected: {sum(self.injected.values())}, "
                f"survived: {sum(self.survived.values())}"
            )
            for point in sorted(self.injected):
                out.append(
                    f"  {point}: injected {self.injected[point]}, survived {self.survived[point]}"
                )
        if self.hostile:
            out.append(f"hostile inputs tried: {sum(self.hostile.values())}")
            for kind in sorted(self.hostile):
                out.append(f"  {kind}: {self.hostile[kind]}")
        out.extend(self.load)
        return out

    def as_data(self) -> dict[str, Any]:
        """The figures as plain data (what a pytest-xdist worker hands to the controller)."""
        return {
            "injected": dict(self.injected),
            "survived": dict(self.survived),
            "hostile": dict(self.hostile),
            "load": list(self.load),
        }

    def merge(self, data: dict[str, Any]) -> None:
        """Add the figures of :meth:`as_data` from another process to these."""
        self.injected.update(data.get("injected", {}))
        self.survived.update(data.get("survived", {}))
        self.hostile.update(data.get("hostile", {}))
        self.load.extend(data.get("load", []))


LEDGER = Ledger()
"""The session's figures, printed at the end of the run (see ``conftest.py``)."""

# ----------------------------------------------------------------------------- fault plan


class InjectedFault(StorageError):
    """The storage fault the harness raises by default."""


def injected(point: str) -> BaseException:
    """The default fault for ``point``: a :class:`StorageError` naming it."""
    return InjectedFault(f"injected fault at {point}")


@attrs.define
class Fault:
    """Raise ``make(point)`` at the calls ``at`` (1-based) of ``point``.

    With ``after`` the real operation runs first and the fault is raised
    afterwards (an operation that took effect but reported failure).
    """

    point: str
    at: tuple[int, ...] = (1,)
    make: Callable[[str], BaseException] = injected
    after: bool = False


class FaultPlan:
    """Counts calls per injection point and fires the armed faults.

    Unarmed, every wrapper simply delegates. :attr:`fired` lists the points
    that fired since the last :meth:`arm`, in order.
    """

    def __init__(self) -> None:
        self.armed = False
        self.faults: dict[str, Fault] = {}
        self.calls: Counter[str] = Counter()
        self.fired: list[str] = []

    def arm(self, *faults: Fault) -> None:
        """Arm ``faults`` and reset the counters."""
        self.faults = {f.point: f for f in faults}
        self.calls = Counter()
        self.fired = []
        self.armed = True

    def disarm(self) -> None:
        """Stop firing; :attr:`fired` is kept."""
        self.armed = False

    def hit(self, point: str) -> Fault | None:
        """Count a call of ``point``; return the fault to raise, if one fires now."""
        if not self.armed:
            return None
        self.calls[point] += 1
        fault = self.faults.get(point)
        if fault is not None and self.calls[point] in fault.at:
            self.fired.append(point)
            return fault
        return None

    def call(self, point: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``func`` as the operation ``point``, raising an armed fault before or after it."""
        fault = self.hit(point)
        if fault is None:
            return func(*args, **kwargs)
        if not fault.after:
            raise fault.make(point)
        func(*args, **kwargs)
        raise fault.make(point)


# ----------------------------------------------------------------------------- wrappers


class _RepositoryProxy:
    """Delegates every method of a repository, through the plan (points ``<prefix>.<name>``)."""

    def __init__(self, inner: object, prefix: str, plan: FaultPlan) -> None:
        self._inner = inner
        self._prefix = prefix
        self._plan = plan

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target) or name.startswith("_"):
            return target
        point = f"{self._prefix}.{name}"

        def method(*args: Any, **kwargs: Any) -> Any:
            return self._plan.call(point, target, *args, **kwargs)

        return method


class FaultyUnitOfWork(UnitOfWorkWrapper):
    """A unit of work whose repositories and ``commit`` go through a :class:`FaultPlan`."""

    def __init__(self, inner: UnitOfWork, plan: FaultPlan) -> None:
        super().__init__(inner)
        self._plan = plan
        self.files: FileRepository = _RepositoryProxy(inner.files, "files", plan)  # type: ignore[assignment]
        self.workflows: WorkflowRepository = _RepositoryProxy(  # type: ignore[assignment]
            inner.workflows, "workflows", plan
        )
        self.versions: VersionRepository = _RepositoryProxy(  # type: ignore[assignment]
            inner.versions, "versions", plan
        )
        self.maintenance: MaintenanceRepository = _RepositoryProxy(  # type: ignore[assignment]
            inner.maintenance, "maintenance", plan
        )
        self.inline_blobs: InlineBlobRepository = _RepositoryProxy(  # type: ignore[assignment]
            inner.inline_blobs, "inline_blobs", plan
        )

    def commit(self) -> None:
        self._plan.call("commit", self._inner.commit)

    def rollback(self) -> None:
        self._plan.call("rollback", self._inner.rollback)


def faulty_factory(inner: UnitOfWorkFactory, plan: FaultPlan) -> UnitOfWorkFactory:
    """A unit-of-work factory whose units go through ``plan``; opening one is point ``uow.open``."""

    def make() -> UnitOfWork:
        fault = plan.hit("uow.open")
        if fault is not None:
            raise fault.make("uow.open")
        return FaultyUnitOfWork(inner(), plan)

    return make


class FaultyBlobStore:
    """A :class:`BlobStore` whose methods go through a :class:`FaultPlan` (points ``blob.<name>``)."""

    def __init__(self, inner: BlobStore, plan: FaultPlan) -> None:
        self.inner = inner
        self._plan = plan

    @property
    def url(self) -> str:
        return self.inner.url

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        result: int = self._plan.call("blob.put", self.inner.put, key, data)
        return result

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        result: BlobReader = self._plan.call("blob.open", self.inner.open, key, chunk_size)
        return result

    def stat(self, key: str) -> BlobStat:
        result: BlobStat = self._plan.call("blob.stat", self.inner.stat, key)
        return result

    def exists(self, key: str) -> bool:
        result: bool = self._plan.call("blob.exists", self.inner.exists, key)
        return result

    def delete(self, key: str) -> None:
        self._plan.call("blob.delete", self.inner.delete, key)

    def keys(self) -> Iterator[str]:
        result: Iterator[str] = self._plan.call("blob.keys", self.inner.keys)
        return result

    def identity(self, *, create: bool = False) -> str | None:
        result: str | None = self._plan.call("blob.identity", self.inner.identity, create=create)
        return result

    def register_database(self, database_id: str) -> None:
        self._plan.call("blob.register_database", self.inner.register_database, database_id)

    def databases(self) -> set[str]:
        result: set[str] = self._plan.call("blob.databases", self.inner.databases)
        return result

    def mark_committed(self, key: str) -> bool:
        result: bool = self._plan.call("blob.mark_committed", self.inner.mark_committed, key)
        return result

    def is_committed(self, key: str) -> bool:
        result: bool = self._plan.call("blob.is_committed", self.inner.is_committed, key)
        return result


def make_binder(
    uow_factory: UnitOfWorkFactory, blobs: BlobStore, *, max_file_size: int | None = None
) -> DocBinder:
    """A binder over the given ports with the default authorizer, clock, ids and extractor."""
    return wire_binder(uow_factory, blobs, max_file_size=max_file_size)


# ----------------------------------------------------------------------------- inputs


class InputBroke(ConnectionResetError):
    """What a producer's input stream raises half-way (not a docbinder error)."""


def chunks(total: int, size: int = 128 * 1024, *, fail_after: int | None = None) -> Iterator[bytes]:
    """``total`` bytes in chunks of ``size``; raise :class:`InputBroke` after ``fail_after`` chunks."""
    sent = 0
    index = 0
    while sent < total:
        if fail_after is not None and index == fail_after:
            raise InputBroke("the producer's input stream broke")
        piece = min(size, total - sent)
        yield bytes([index % 251]) * piece
        sent += piece
        index += 1


class CountingInput:
    """An iterable of ``count`` chunks of ``size`` bytes that records how many bytes were taken."""

    def __init__(self, count: int, size: int) -> None:
        self.count = count
        self.size = size
        self.taken = 0

    def __iter__(self) -> Iterator[bytes]:
        chunk = b"z" * self.size
        for _ in range(self.count):
            self.taken += self.size
            yield chunk


# ----------------------------------------------------------------------------- invariants


@attrs.frozen
class StoreState:
    """What the metadata and blob stores hold."""

    items: tuple[FileItem, ...]
    keys: frozenset[str]

    @property
    def named(self) -> frozenset[str]:
        """Blob keys some FileItem names."""
        return frozenset(i.blob_key for i in self.items)

    @property
    def leftovers(self) -> frozenset[str]:
        """Blob keys no FileItem names."""
        return self.keys - self.named


def check_consistent(uow_factory: UnitOfWorkFactory, blobs: BlobStore) -> StoreState:
    """Assert the fault-order invariants; return what is stored.

    No FileItem without its blob; no ChatDocument without its FileItem and its
    message.
    """
    with uow_factory() as uow:
        items = tuple(uow.maintenance.iter_files())
        documents = list(uow.maintenance.iter_documents())
        messages: dict[str, set[str]] = {}
        for doc in documents:
            if doc.workflow_id not in messages:
                messages[doc.workflow_id] = {
                    m.id for m in uow.workflows.list_messages(doc.workflow_id)
                }
    keys = frozenset(blobs.keys())
    without_blob = [i.id for i in items if not blobs.exists(i.blob_key)]
    assert without_blob == [], f"FileItems without blob: {without_blob}"
    ids = {i.id for i in items}
    dangling = [d.id for d in documents if d.file_id not in ids]
    assert dangling == [], f"ChatDocuments without FileItem: {dangling}"
    orphans = [d.id for d in documents if d.message_id not in messages[d.workflow_id]]
    assert orphans == [], f"ChatDocuments without message: {orphans}"
    return StoreState(items, keys)


# ----------------------------------------------------------------------------- the CLI

CLI_ENV_NAMES = (
    "DOCBINDER_HOME",
    "DOCBINDER_CONFIG",
    "DOCBINDER_DATABASE_URL",
    "DOCBINDER_BLOB_URL",
    "DOCBINDER_AUTHORIZER",
    "DOCBINDER_CASBIN_MODEL",
    "DOCBINDER_CASBIN_POLICY",
    "DOCBINDER_S3_ENDPOINT_URL",
    "DOCBINDER_S3_REGION",
    "DOCBINDER_S3_CHECKSUMS",
    "DOCBINDER_MAX_FILE_SIZE",
    "DOCBINDER_S3_WHOLE_BUCKET",
    "DOCBINDER_S3_CONNECT_TIMEOUT",
    "DOCBINDER_S3_READ_TIMEOUT",
    "DOCBINDER_S3_MAX_ATTEMPTS",
    "DOCBINDER_USER",
    "DOCBINDER_MANDATE",
    "DOCBINDER_FEATURE_INSTANCE",
    "DOCBINDER_ROLE",
)
"""Environment variables the CLI reads; cleared for each invocation unless given."""


def invoke_cli(args: Sequence[str], env: dict[str, str] | None = None) -> Result:
    """Run the real ``docbinder`` command in-process; the ``docbinder`` logger is restored after."""
    logger = logging.getLogger("docbinder")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    environment: dict[str, str | None] = dict.fromkeys(CLI_ENV_NAMES)
    environment.update(env or {})
    try:
        return CliRunner().invoke(app, list(args), env=environment)
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]


def error_lines(result: Result) -> list[str]:
    """The non-blank lines the command wrote to stderr."""
    return [line for line in result.stderr.splitlines() if line.strip()]


def files_under(root: Path) -> list[Path]:
    """Every regular file below ``root`` (hidden ones included), sorted.

    The store's own records (``.docbinder-store``, its identity;
    ``.docbinder-databases/*``, the databases writing into it; and
    ``.docbinder-claims/*``, each database's claim, ADR 0075) are part of the
    store, not leftovers, and are not listed.
    """
    if not root.exists():
        return []
    identity = root / ".docbinder-store"
    folders = (root / ".docbinder-databases", root / ".docbinder-claims")
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p != identity and not any(f in p.parents for f in folders)
    )


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (symlinks resolved) lies inside ``root``."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, base]) == base
