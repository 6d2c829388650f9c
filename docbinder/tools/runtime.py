"""What the tools need from a :class:`~docbinder.application.binder.Run` beyond its public methods.

The tools build a few helpers from the run's binder: the in-place update use
case (:class:`~docbinder.tools.rewrite.UpdateFileContent`) and the content
extractor for file-level reads. Where the binder exposes the piece (``ids``,
``max_file_size``, ``extractor``) it is used, so a host's own adapters apply;
otherwise a default is used: random UUID ids, the binder's store size limit,
and :class:`~docbinder.adapters.extract.DefaultContentExtractor`.
"""

from __future__ import annotations

from typing import Any

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.system import UuidIdFactory
from docbinder.application.binder import Run
from docbinder.ports.extractor import ContentExtractor
from docbinder.ports.system import IdFactory
from docbinder.tools.rewrite import UpdateFileContent


def ids_for(run: Run) -> IdFactory:
    """The binder's id factory if it exposes one (``binder.ids``), else random UUIDs."""
    ids: Any = getattr(run.binder, "ids", None)
    return ids if ids is not None else UuidIdFactory()


def max_file_size_for(run: Run) -> int | None:
    """The binder's size limit for stored files in bytes, or ``None`` for no limit."""
    binder: Any = run.binder
    if hasattr(binder, "max_file_size"):
        limit: int | None = binder.max_file_size
        return limit
    # The store use case holds the limit the binder was built with.
    return getattr(binder.store_file, "_max_size", None)


def updater_for(run: Run) -> UpdateFileContent:
    """The in-place update use case over the run's binder adapters."""
    binder = run.binder
    return UpdateFileContent(
        binder.uow_factory, binder.blobs, binder.access, ids_for(run), max_file_size_for(run)
    )


def extractor_for(run: Run, max_text_chars: int | None = None) -> ContentExtractor:
    """The binder's content extractor (``binder.extractor``) or a default one.

    The default reads at most ``max_text_chars`` characters of text
    (the extractor's default when ``None``).
    """
    extractor: Any = getattr(run.binder, "extractor", None)
    if extractor is None:
        # The content use case holds the extractor the binder was built with.
        extractor = getattr(run.binder.get_content, "_extractor", None)
    if extractor is not None:
        return extractor  # type: ignore[no-any-return]
    if max_text_chars is None:
        return DefaultContentExtractor()
    return DefaultContentExtractor(max_text_chars=max(1, max_text_chars))
