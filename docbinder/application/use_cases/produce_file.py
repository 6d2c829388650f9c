"""The producer path in one transaction: store, duplicate check and attach (SPEC C1-C3, section 5).

A file-producing tool calls :class:`ProduceFile` once. The blob is written
first (SPEC section 5 order); then a single unit of work runs the duplicate
check, inserts the FileItem (or takes the readable duplicate) and adds the
ChatMessage with its ChatDocument, and commits once. The tool therefore
never sees a FileItem whose attach was half done, and the metadata costs one
transaction instead of one per step.

Storing errors propagate; attaching never fails the store: when no workflow
is bound, the caller may not update it, or the message cannot be added, the
file is still stored, one warning names the cause (SPEC C3) and the result's
``not_attached`` carries it.
"""

from __future__ import annotations

import attrs

from docbinder.application.context import RunContext
from docbinder.application.provenance import provenance_for
from docbinder.application.steps.hashing import FileData
from docbinder.application.steps.results import NotAttached
from docbinder.application.steps.storing import FileStorer, StoredFile, WorkNotCommitted
from docbinder.application.use_cases.attach_file import (
    AttachFile,
    PreparedAttach,
    log_attach_failure,
)
from docbinder.domain.errors import TransactionAborted
from docbinder.domain.model import ChatMessage, FileItem, Provenance, check_message_text
from docbinder.ports.metadata import UnitOfWork


@attrs.frozen
class ProducedFile:
    """What :class:`ProduceFile` did: the stored file and, if attached, its message.

    ``message`` is ``None`` when the attach did not happen; ``not_attached``
    then says why (the same cause was logged as one warning).
    """

    stored: StoredFile
    message: ChatMessage | None
    not_attached: NotAttached | None = None

    @property
    def document_id(self) -> str | None:
        """The new ChatDocument's id, or ``None``."""
        return self.message.documents[0].id if self.message is not None else None


class ProduceFile:
    """Store a file and attach it to the run's workflow in one transaction.

    Composed of the :class:`~docbinder.application.steps.storing.FileStorer` that
    :class:`~docbinder.application.use_cases.store_file.StoreFile` runs (which asks
    :class:`~docbinder.application.use_cases.check_duplicate.CheckDuplicate` about
    duplicates) and of :class:`~docbinder.application.use_cases.attach_file.AttachFile`,
    the one attach: the attach is prepared before the blob is written, added
    inside the storer's recording unit (its ``then``) and finished after the
    commit, so storing, the duplicate rule and attaching each keep one source
    of truth.
    """

    def __init__(self, storer: FileStorer, attach_file: AttachFile) -> None:
        self._storer = storer
        self._attach = attach_file

    def __call__(
        self,
        ctx: RunContext,
        file_name: str,
        data: FileData,
        *,
        label: str,
        user_message: str = "",
        mime_type: str | None = None,
        provenance: Provenance | None = None,
    ) -> ProducedFile:
        """Store ``data`` as ``file_name`` for the run's principal and attach it under ``label``.

        The new FileItem records ``provenance`` (else the tool call bound with
        :func:`~docbinder.application.provenance.tool_call`), completed with
        the run's id, workflow and the files it read
        (:func:`~docbinder.application.provenance.provenance_for`), and the id
        of the ChatMessage that attaches it (``None`` when the attach did not
        happen; a reused duplicate keeps the provenance of its first producer).

        Raises what :meth:`~docbinder.application.steps.storing.FileStorer.store`
        raises (:class:`InvalidInput`, also for a ``user_message`` that breaks
        :func:`~docbinder.domain.model.check_text_field`, :class:`AccessDenied`,
        :class:`SizeLimitExceeded`, :class:`QuotaExceeded`, :class:`StorageError`); never
        raises for the attach.
        """
        # The caller's own text is checked before anything is stored, the same on every
        # backend (ADR 0018); only refusals about the workflow leave the file unattached.
        check_message_text(user_message, "user_message")
        prepared: PreparedAttach | None = None
        refused: Exception | None = None
        try:
            prepared = self._attach.prepare(ctx, label=label, user_message=user_message)
        except Exception as exc:  # logged once the file is stored
            refused = exc
        failures: list[tuple[str, Exception]] = []

        # The message is inserted after the FileItem in the same unit; its id was made
        # when the attach was prepared.
        recorded = provenance_for(
            provenance,
            run_id=ctx.run_id,
            workflow_id=ctx.workflow_id,
            parents=ctx.read_files,
            message_id=prepared.message_id if prepared is not None else None,
        )

        def attach(uow: UnitOfWork, item: FileItem) -> ChatMessage | None:
            if prepared is None:
                return None
            try:
                return prepared.add(uow, [item])
            except TransactionAborted:
                # The database ended the whole unit (MariaDB rolls back the FileItem's
                # insert too): never commit what is left; the storer runs the unit again.
                raise
            except Exception as exc:  # the store goes on; the cause is logged below
                failures.append((item.id, exc))
                if item.provenance.message_id == prepared.message_id:
                    # The new FileItem names a message that will not exist: take it back.
                    unnamed = attrs.evolve(item.provenance, message_id=None)
                    uow.files.update(attrs.evolve(item, provenance=unnamed))
                return None

        try:
            stored, message = self._storer.store(
                ctx.principal,
                file_name,
                data,
                attach,
                mime_type=mime_type,
                provenance=recorded,
            )
        except WorkNotCommitted as exc:
            # A duplicate was found; only the attach failed to commit.
            stored, message = exc.stored, None
            failures.append((stored.item.id, exc))
        if message is None and prepared is not None:
            item = stored.item
            if item.provenance.message_id == prepared.message_id:
                unnamed = attrs.evolve(item.provenance, message_id=None)
                stored = attrs.evolve(stored, item=attrs.evolve(item, provenance=unnamed))
        not_attached: NotAttached | None = None
        if refused is not None:
            not_attached = log_attach_failure(stored.item.id, refused)
        for file_id, failure in failures:
            not_attached = log_attach_failure(file_id, failure)
        if message is not None and prepared is not None:
            prepared.finish(message)
            not_attached = None
        elif not_attached is None:  # pragma: no cover - every path without a message has a cause
            not_attached = NotAttached.from_error(RuntimeError("the attach did not happen"))
        return ProducedFile(stored, message, not_attached)
