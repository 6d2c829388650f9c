"""Content for consuming tools: resolved documents become ContentParts (SPEC C8)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Generator

import attrs

from docbinder.application.context import RunContext
from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.use_cases.resolve_document_list import (
    Resolution,
    ResolveDocumentList,
    UnresolvedReason,
    UnresolvedReference,
)
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import BlobMissing, StorageError
from docbinder.domain.model import ContentPart, FileItem
from docbinder.domain.reading import ReadCall, ReadLimits, read_call, scope_key
from docbinder.ports.blobs import BlobStore
from docbinder.ports.extractor import ContentExtractor

log = logging.getLogger(__name__)


@attrs.frozen
class DocumentContent:
    """The parts of one resolved document, in order.

    ``same_as`` is the reference of an earlier document of the same call with
    the same bytes and type: this one was not read again and has no parts of
    its own (they are that document's).
    """

    reference: str
    document_id: str
    file_id: str
    file_name: str
    mime_type: str
    parts: tuple[ContentPart, ...]
    same_as: str | None = None


def content_size(parts: tuple[ContentPart, ...] | list[ContentPart]) -> int:
    """What parts cost a read call's byte budget: text characters plus ``data`` bytes."""
    return sum(len(p.text or "") + len(p.data or b"") for p in parts)


@attrs.frozen
class ContentResult:
    """What a consuming tool receives: parts per document, plus why anything is missing."""

    documents: tuple[DocumentContent, ...]
    unresolved: tuple[UnresolvedReference, ...]
    resolution: Resolution

    @property
    def parts(self) -> tuple[ContentPart, ...]:
        """All parts of all documents, in reference order."""
        return tuple(p for d in self.documents for p in d.parts)


def _opened_on_demand(blobs: BlobStore, item: FileItem) -> Generator[bytes, None, None]:
    """The blob's chunks, opened at the first read: a cache hit never fetches the bytes.

    Closing the generator (the caller does, however extraction ends) closes the blob.
    """
    with blobs.open(item.blob_key) as chunks:
        yield from chunks


class GetContent:
    """Resolve a ``documentList`` and extract each document's content parts.

    ``limits`` (:class:`~docbinder.domain.reading.ReadLimits`, default the
    defaults) bound each call across its documents; inside an enclosing read
    call (a tool call) that call's budget is used.
    """

    def __init__(
        self,
        resolve: ResolveDocumentList,
        blobs: BlobStore,
        extractor: ContentExtractor,
        limits: ReadLimits | None = None,
        *,
        audit: AuditTrail = DISABLED,
    ) -> None:
        self._resolve = resolve
        self._blobs = blobs
        self._extractor = extractor
        self.limits = limits if limits is not None else ReadLimits()
        self._audit = audit

    def __call__(self, ctx: RunContext, document_list: object) -> ContentResult:
        """Content parts for every readable document; never raises for bad references.

        A document whose blob cannot be read (missing: ``blob_missing``; any
        other storage fault: ``storage_fault``) or whose extraction raises
        (``extraction_failed``) becomes an unresolved entry with the reason;
        the other documents' parts are still returned.

        Budget (ADR 0071): the call as a whole may spend ``limits`` (seconds,
        bytes of content returned, parts); each extraction's own time budget is
        cut to what the call has left. Documents after the budget ran out, and a
        document whose parts would take the call past its bytes or parts, become
        unresolved entries ``not_read`` with a sentence saying which budget and
        that another call may ask for them; so does every document once the
        caller is gone (the converter in progress is stopped). A document with
        the same bytes and MIME type as an earlier one of the call is not read
        again: it is listed with ``same_as`` and no parts.

        A non-empty reference list that yields zero parts is logged with the
        reason of every reference (the "0 valid ContentParts" failure mode).
        """
        scope = scope_key(
            ctx.principal.mandate_id, ctx.principal.user_id, ctx.principal.feature_instance_id
        )
        with read_call(self.limits, scope=scope) as call:
            return self._read(ctx, document_list, call)

    def _read(self, ctx: RunContext, document_list: object, call: ReadCall) -> ContentResult:
        resolution = self._resolve(ctx, document_list, audit_resolved=False)
        documents: list[DocumentContent] = []
        unresolved = list(resolution.unresolved)
        first_of: dict[tuple[str, str], str] = {}
        for resolved in resolution.documents:
            doc, item = resolved.document, resolved.file
            earlier = first_of.get((item.sha256, item.mime_type))
            if earlier is not None:
                documents.append(
                    DocumentContent(
                        resolved.reference,
                        doc.id,
                        item.id,
                        item.file_name,
                        item.mime_type,
                        (),
                        same_as=earlier,
                    )
                )
                continue
            stop = call.stop_reason()
            if stop is not None:
                unresolved.append(
                    UnresolvedReference(resolved.reference, UnresolvedReason.NOT_READ, stop, doc.id)
                )
                continue
            try:
                with contextlib.closing(_opened_on_demand(self._blobs, item)) as chunks:
                    parts = self._extractor.extract(doc.id, item, chunks)
            except BlobMissing:
                log.warning("blob missing: file %s has no blob %s", item.id, item.blob_key)
                unresolved.append(
                    UnresolvedReference(
                        resolved.reference,
                        UnresolvedReason.BLOB_MISSING,
                        "the document's file content is missing from the blob store",
                        doc.id,
                    )
                )
                continue
            except (StorageError, OSError) as exc:
                # One document's storage fault must not sink the others (issue: hostile input).
                log.warning(
                    "content of document %s not read: storage fault on blob %s of file %s: %s",
                    doc.id,
                    item.blob_key,
                    item.id,
                    exc,
                )
                unresolved.append(
                    UnresolvedReference(
                        resolved.reference,
                        UnresolvedReason.STORAGE_FAULT,
                        f"the document's file content could not be read from storage: {exc}",
                        doc.id,
                    )
                )
                continue
            except Exception as exc:
                log.exception(
                    "content extraction failed for document %s (%s): %s",
                    doc.id,
                    item.mime_type,
                    exc,
                )
                unresolved.append(
                    UnresolvedReference(
                        resolved.reference,
                        UnresolvedReason.EXTRACTION_FAILED,
                        f"the document's content could not be extracted: {type(exc).__name__}",
                        doc.id,
                    )
                )
                continue
            if call.token.cancelled:
                unresolved.append(
                    UnresolvedReference(
                        resolved.reference,
                        UnresolvedReason.NOT_READ,
                        f"not read: {call.token.reason}",
                        doc.id,
                    )
                )
                continue
            over = call.over_budget(content_size(parts), len(parts))
            if over is not None:
                unresolved.append(
                    UnresolvedReference(resolved.reference, UnresolvedReason.NOT_READ, over, doc.id)
                )
                continue
            call.spend(content_size(parts), len(parts))
            first_of[(item.sha256, item.mime_type)] = resolved.reference
            documents.append(
                DocumentContent(
                    resolved.reference,
                    doc.id,
                    item.id,
                    item.file_name,
                    item.mime_type,
                    tuple(parts),
                )
            )
        total = sum(len(d.parts) for d in documents)
        asked = len(resolution.references.references) + len(resolution.references.rejected)
        if asked and total == 0:
            log.warning(
                "0 content parts from %d reference(s): %s",
                asked,
                ", ".join(f"{u.reference} ({u.reason.value})" for u in unresolved[:20])
                or "no parts extracted",
            )
        if self._audit.enabled and resolution.documents:
            self._note_reads(ctx, resolution, documents, unresolved)
        return ContentResult(tuple(documents), tuple(unresolved), resolution)

    def _note_reads(
        self,
        ctx: RunContext,
        resolution: Resolution,
        documents: list[DocumentContent],
        unresolved: list[UnresolvedReference],
    ) -> None:
        """One ``read_content`` event per resolved reference (ADR 0127): ``ok``, or why it was not read.

        The resolver recorded the unresolved references; a resolved one is
        recorded here only, as what became of it.
        """
        audit, principal, workflow_id = self._audit, ctx.principal, ctx.workflow_id
        events = [
            audit.event(
                AuditAction.READ_CONTENT,
                principal,
                file_id=d.file_id,
                document_id=d.document_id,
                workflow_id=workflow_id,
            )
            for d in documents
        ]
        not_read = unresolved[len(resolution.unresolved) :]
        if not_read:
            files = {r.document.id: r.file.id for r in resolution.documents}
            events.extend(
                audit.event(
                    AuditAction.READ_CONTENT,
                    principal,
                    outcome=u.reason.value,
                    file_id=files.get(u.document_id) if u.document_id else None,
                    document_id=u.document_id,
                    workflow_id=workflow_id,
                )
                for u in not_read
            )
        audit.note(*events, at_once=resolution.reads_move_expiry)
