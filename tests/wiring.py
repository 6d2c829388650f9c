"""One way for tests to wire a DocBinder over given ports, through the composition root."""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import Any, BinaryIO

import attrs

from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.adapters.system import UtcClock, UuidIdFactory
from docbinder.application import DocBinder, UseCases
from docbinder.container import compose_binder
from docbinder.ports.blobs import BlobReader, BlobStat, BlobStore, Chunks
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory


def wire_binder(
    uow_factory: UnitOfWorkFactory,
    blobs: BlobStore,
    read_uow_factory: UnitOfWorkFactory | None = None,
    **options: Any,
) -> DocBinder:
    """A binder over ``uow_factory`` and ``blobs`` with the role table, UTC clock, UUID ids,
    the default extractor and the sniffing MIME detector; ``options`` go to
    :func:`~docbinder.container.compose_binder` (``max_file_size``, ``authorizer``, ...)."""
    wiring: dict[str, Any] = {
        "authorizer": RoleTableAuthorizer(),
        "clock": UtcClock(),
        "ids": UuidIdFactory(),
        "extractor": DefaultContentExtractor(),
        "mime": SniffingMimeDetector(),
    }
    wiring.update(options)
    return compose_binder(
        uow_factory=uow_factory, blobs=blobs, read_uow_factory=read_uow_factory, **wiring
    )


class UnitOfWorkWrapper:
    """A unit of work that hands everything to ``inner``; tests override what they watch.

    Entering enters ``inner`` and returns the wrapper, leaving leaves ``inner``;
    any other attribute (``files``, ``workflows``, ``commit``, ...) is
    ``inner``'s unless a subclass sets or defines it.
    """

    def __init__(self, inner: UnitOfWork) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> Any:
        self._inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._inner.__exit__(exc_type, exc, tb)


USE_CASE_NAMES = frozenset(field.name for field in attrs.fields(UseCases))
"""The use cases of every :class:`DocBinder`: the fields of its :class:`UseCases` bundle."""


class BlobStoreWrapper:
    """Passes the :class:`~docbinder.ports.blobs.BlobStore` port's own methods to ``inner``.

    Only the methods every store has: a subclass that adds none of the
    optional ones (``location``, ``mark_committed``, ``is_committed``) is a
    store without them, as a third-party store written before they existed.
    Tests subclass it and override what they watch.
    """

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner

    @property
    def url(self) -> str:
        return self.inner.url

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        return self.inner.put(key, data)

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        return self.inner.open(key, chunk_size)

    def stat(self, key: str) -> BlobStat:
        return self.inner.stat(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def keys(self) -> Iterator[str]:
        return self.inner.keys()

    def identity(self, *, create: bool = False) -> str | None:
        return self.inner.identity(create=create)

    def register_database(self, database_id: str) -> None:
        self.inner.register_database(database_id)

    def databases(self) -> set[str]:
        return self.inner.databases()
