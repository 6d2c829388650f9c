"""The task-result path (SPEC C9): a workflow action that returns several files at once.

All files end in one ChatMessage with one ChatDocument each, through the same
bridge as every single-file tool (:meth:`Run.persist_action_result`), so the
whole result is addressable as ``docList:<label>`` and each file as
``docItem:<id>``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs

from docbinder.application.binder import Run
from docbinder.application.steps.hashing import FileData
from docbinder.application.steps.results import format_tool_file_result
from docbinder.domain.errors import (
    AccessDenied,
    DocbinderError,
    FileItemNotFound,
    InvalidInput,
    NoActiveWorkflow,
)
from docbinder.domain.model import ChatMessage, FileItem, check_file_name

log = logging.getLogger(__name__)


@attrs.frozen
class TaskResult:
    """Result of :func:`persist_task_result`.

    ``items`` are the stored FileItems in input order; ``message`` is the
    ChatMessage that carries them, or ``None`` when it could not be created
    (no workflow bound, no permission, storage fault; the cause was logged).
    """

    text: str
    items: tuple[FileItem, ...]
    message: ChatMessage | None

    @property
    def list_reference(self) -> str | None:
        """``docList:<documents_label>`` of the message, or ``None``."""
        return f"docList:{self.message.documents_label}" if self.message is not None else None

    @property
    def references(self) -> tuple[str, ...]:
        """``docItem:<id>`` of every ChatDocument of the message, in order."""
        if self.message is None:
            return ()
        return tuple(doc.reference for doc in self.message.documents)


def persist_task_result(
    run: Run,
    files: Sequence[tuple[str, FileData]],
    *,
    label: str,
    message: str = "",
) -> TaskResult:
    """Store every ``(file name, data)`` and attach them all as one ChatMessage labelled ``label``.

    ``data`` is bytes, an iterable of byte chunks or a binary file object; it
    is streamed. ``message`` is the message text. The label is made unique in
    the workflow by the bridge (``<label>#<8 hex digits>`` when taken), and the
    text names the label actually used::

        Task result with 2 files (30 bytes)
          documentList ref: docList:<label>
        Stored 'a.csv' (12 bytes)
          documentList ref: docItem:<chatDocumentId>
          file id: <fileId>
        Stored 'b.md' (18 bytes)
          documentList ref: docItem:<chatDocumentId>
          file id: <fileId>

    Without a workflow (or without ``update`` permission on it) the files are
    stored, every ``documentList ref`` line is left out, and one warning names
    the cause; attaching never raises. All names are checked before anything
    is stored. Storing errors propagate (:class:`InvalidInput`,
    :class:`AccessDenied`, :class:`SizeLimitExceeded`, :class:`StorageError`).
    """
    if not isinstance(label, str) or not label.strip():
        raise InvalidInput("a task result needs a non-empty label")
    if isinstance(files, str | bytes) or not files:
        raise InvalidInput("a task result needs at least one file")
    for entry in files:
        if not isinstance(entry, tuple) or len(entry) != 2:
            raise InvalidInput("each file of a task result must be a (file name, data) pair")
        check_file_name(entry[0])
    items = tuple(run.store_file(name, data).item for name, data in files)
    stored = _attach(run, items, label, message)
    documents = stored.documents if stored is not None else ()
    total = sum(item.size for item in items)
    plural = "" if len(items) == 1 else "s"
    lines = [f"Task result with {len(items)} file{plural} ({total} bytes)"]
    if stored is not None:
        lines.append(f"  documentList ref: docList:{stored.documents_label}")
    for index, item in enumerate(items):
        document_id = documents[index].id if documents else None
        lines.append(format_tool_file_result("Stored", item, document_id))
    return TaskResult("\n".join(lines), items, stored)


def _attach(run: Run, items: Sequence[FileItem], label: str, message: str) -> ChatMessage | None:
    try:
        return run.persist_action_result(items, label=label, user_message=message)
    except NoActiveWorkflow:
        log.warning(
            "task result not attached: no workflow bound; %d file(s) stay reachable by file id",
            len(items),
        )
    except (AccessDenied, FileItemNotFound) as exc:
        log.warning("task result not attached: permission denied: %s", exc)
    except DocbinderError as exc:
        log.warning("task result not attached: storage fault: %s", exc)
    except Exception as exc:  # a host adapter may raise anything; the tool must not see it
        log.warning("task result not attached: storage fault: %r", exc)
    return None
