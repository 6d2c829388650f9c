"""Resolve references against the active workflow (SPEC C7).

``docItem:<id>`` matches only ChatDocument ids of the active workflow;
``docList:<label>`` gives the documents of the message with that label;
``file:<id>`` gives the workflow's documents pointing at that FileItem; a bare id
(no prefix, read as ``docItem``) that names no ChatDocument is tried as a FileItem id,
since the unified tool-result block (SPEC C5) shows both ids to the model. The
workflow is read again from storage and must be readable by the run's principal
(otherwise every reference is ``not_in_workflow``, whether or not it exists: no
existence oracle). Each document is read-checked through the same visibility
decision as ``get_file``.
Lookups are indexed, one batch per reference kind (``docItem`` ids, ``docList``
labels, ``file`` ids with the bare ids no ChatDocument has, then the FileItems
of every document found), so the cost grows with the number of references, not
with the size of the workflow, and the number of queries does not grow with
the number of references. A ``docList:<label>`` that names no label exactly is
looked up once more in its NFC and NFD spellings (labels hold file names, which
macOS and synced shares store decomposed): one canonically equivalent label is
taken, several are refused as ``ambiguous_name`` with every spelling shown
(:func:`~docbinder.domain.names.match_name`, ADR 0066). Resolving reads metadata only: whether a document's
bytes are still in the blob store is found out when they are read (ADR 0028):
``GetContent`` reports ``blob_missing``, ``Run.open_file`` raises
:class:`~docbinder.domain.errors.BlobMissing`. A deleted FileItem, a metadata
fact, is reported here as ``file_missing``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

import attrs

from docbinder.application.context import RunContext
from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.expiry import read_moves_expiry
from docbinder.application.steps.results import printable
from docbinder.domain.access import Action
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import AmbiguousName
from docbinder.domain.governance import RetentionBasis, policy_for
from docbinder.domain.model import ChatDocument, ChatWorkflow, FileItem
from docbinder.domain.names import canonical, match_name, spellings
from docbinder.domain.parsing import coerce_document_references
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReference,
    DocumentReferenceList,
    FileReference,
)
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock

log = logging.getLogger(__name__)

DEFAULT_SUGGESTIONS = 10
"""How many recent documents an answer with unresolved references lists."""


class UnresolvedReason(enum.StrEnum):
    """Why a reference did not resolve (SPEC C7).

    ``BLOB_MISSING``, ``STORAGE_FAULT``, ``EXTRACTION_FAILED`` and ``NOT_READ``
    (the read call's budget of time, bytes or parts was spent, or its caller
    went away, ADR 0071) come from reading a resolved document's content
    (``GetContent``), never from resolving alone (ADR 0028). ``AMBIGUOUS_NAME``: a ``docList:<label>``
    matched no label exactly and several canonically equivalent ones.
    """

    NO_ACTIVE_WORKFLOW = "no_active_workflow"
    NOT_IN_WORKFLOW = "not_in_workflow"
    ACCESS_DENIED = "access_denied"
    FILE_MISSING = "file_missing"
    BLOB_MISSING = "blob_missing"
    REJECTED_INPUT = "rejected_input"
    STORAGE_FAULT = "storage_fault"
    EXTRACTION_FAILED = "extraction_failed"
    AMBIGUOUS_NAME = "ambiguous_name"
    NOT_READ = "not_read"
    EXPIRED = "expired"


_MESSAGES = {
    UnresolvedReason.NO_ACTIVE_WORKFLOW: "no workflow is bound to this run",
    UnresolvedReason.NOT_IN_WORKFLOW: "no document with this reference in the active workflow",
    UnresolvedReason.ACCESS_DENIED: "the caller may not read this document's file",
    UnresolvedReason.FILE_MISSING: "the document's file was deleted",
    UnresolvedReason.BLOB_MISSING: "the document's file content is missing from the blob store",
    UnresolvedReason.REJECTED_INPUT: "not a usable document reference",
    UnresolvedReason.STORAGE_FAULT: "the document's file content could not be read from storage",
    UnresolvedReason.EXTRACTION_FAILED: "the document's content could not be extracted",
    UnresolvedReason.AMBIGUOUS_NAME: "several labels of the workflow look like this one",
    UnresolvedReason.NOT_READ: "this call's budget was spent before this document",
    UnresolvedReason.EXPIRED: "the document's file passed its retention period",
}


@attrs.frozen
class ResolvedDocument:
    """A resolved ChatDocument with its FileItem and the reference that found it."""

    reference: str
    document: ChatDocument
    file: FileItem


@attrs.frozen
class UnresolvedReference:
    """A reference (or rejected input) that found nothing, with a reason and a sentence."""

    reference: str
    reason: UnresolvedReason
    message: str
    document_id: str | None = None
    expired_at: datetime | None = None
    """For ``expired``: when the file's retention period ended (UTC)."""


@attrs.frozen
class DocumentSuggestion:
    """A recent document of the workflow, listed so the model can correct a reference."""

    reference: str
    file_name: str


@attrs.frozen
class Resolution:
    """The answer of :class:`ResolveDocumentList`.

    ``documents`` in reference order without repeats; ``unresolved`` lists
    every reference that failed; ``suggestions`` (the workflow's most recent
    readable documents, newest first) is filled only when something failed.
    """

    documents: tuple[ResolvedDocument, ...]
    unresolved: tuple[UnresolvedReference, ...]
    suggestions: tuple[DocumentSuggestion, ...]
    references: DocumentReferenceList
    reads_move_expiry: bool = False
    """A ``last_read`` retention policy covers a resolved document: its read is logged at once (ADR 0142)."""

    @property
    def ok(self) -> bool:
        """True when every reference resolved and nothing was rejected."""
        return not self.unresolved


def _unresolved(
    reference: str, reason: UnresolvedReason, doc_id: str | None = None
) -> UnresolvedReference:
    return UnresolvedReference(reference, reason, _MESSAGES[reason], doc_id)


_REFERENCE_PREFIXES = ("docItem:", "docList:", "file:")


def _named_file(text: str) -> str:
    """What a miss names as a file: ``text`` without quotes, backticks and a reference prefix."""
    name = text.strip().strip("`'\"")
    for prefix in _REFERENCE_PREFIXES:
        name = name.removeprefix(prefix)
    return name


_HINTED = (UnresolvedReason.NOT_IN_WORKFLOW, UnresolvedReason.REJECTED_INPUT)
_MAX_NAMED = 5
"""References a name hint lists at most (several documents of one name)."""


def _listed(documents: Sequence[DocumentSuggestion | ChatDocument]) -> str:
    """The references of ``documents``, at most :data:`_MAX_NAMED` and how many more."""
    listed = ", ".join(d.reference for d in documents[:_MAX_NAMED])
    more = len(documents) - _MAX_NAMED
    return f"{listed} and {more} more" if more > 0 else listed


def _with_name_hints(
    unresolved: Sequence[UnresolvedReference],
    names: Sequence[str],
    named: Mapping[str, Sequence[DocumentSuggestion]],
) -> tuple[UnresolvedReference, ...]:
    """``unresolved``, each miss whose ``names`` entry is a document's file name told so.

    A model often sends a file name where a reference belongs (``{"id":
    "report.pdf"}``, ``"report.pdf"``). The resolver does not guess: the
    reference stays unresolved, with its reason, and the message names the
    reference of the workflow's readable document of that name, or of each
    of several (at most :data:`_MAX_NAMED`). ``named`` maps a file name in
    Unicode Normalization Form C to those documents.
    """
    out: list[UnresolvedReference] = []
    for miss, name in zip(unresolved, names, strict=True):
        found: Sequence[DocumentSuggestion] = (
            named.get(canonical(name), ()) if name and miss.reason in _HINTED else ()
        )
        if len(found) == 1:
            hint = (
                f"{printable(found[0].file_name)!r} is a file name, not a reference; the "
                f"document of that name is {found[0].reference}"
            )
            miss = attrs.evolve(miss, message=f"{miss.message}; {hint}")
        elif found:
            hint = (
                f"{printable(found[0].file_name)!r} is a file name, not a reference; "
                f"{len(found)} documents have that name: {_listed(found)}"
            )
            miss = attrs.evolve(miss, message=f"{miss.message}; {hint}")
        out.append(miss)
    return tuple(out)


class ResolutionSink(Protocol):
    """Where a resolution in a bound, readable workflow is kept (the inspector page's record).

    :class:`~docbinder.application.steps.resolution_record.ResolutionRecorder` is the one
    the composition root wires; it must not raise for a storage fault of its own.
    """

    def record(self, ctx: RunContext, document_list: object, resolution: Resolution) -> None:
        """Keep what the model sent (``document_list``) and how it resolved."""


class ResolveDocumentList:
    """Parse a ``documentList`` in any shape and resolve it in the active workflow."""

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        access: AccessPolicy,
        suggestions: int = DEFAULT_SUGGESTIONS,
        recorder: ResolutionSink | None = None,
        *,
        audit: AuditTrail = DISABLED,
        clock: Clock | None = None,
    ) -> None:
        self._uow = uow_factory
        self._access = access
        self._suggestions = suggestions
        self.recorder = recorder
        self._audit = audit
        self._clock = clock

    def __call__(
        self, ctx: RunContext, document_list: object, *, audit_resolved: bool = True
    ) -> Resolution:
        """Resolve ``document_list`` (any JSON-like value); never raises for bad input.

        Storage faults propagate as :class:`StorageError`. With a ``recorder``, a
        resolution in a bound, readable workflow is kept for the inspector page
        (:class:`~docbinder.application.steps.resolution_record.ResolutionRecorder`).
        With an audit log, each reference is one ``resolve`` event: resolved, or
        its reason; ``audit_resolved=False`` leaves the resolved ones to the caller,
        which records each as the event of what it did with it (``get_content``:
        one ``read_content`` event per resolved reference, ADR 0127).
        """
        resolution, readable = self._resolve(ctx, document_list)
        if self.recorder is not None and readable:
            self.recorder.record(ctx, document_list, resolution)
        audit = self._audit
        if audit.enabled and ((audit_resolved and resolution.documents) or resolution.unresolved):
            workflow_id = ctx.workflow_id
            audit.note(
                *(
                    audit.event(
                        AuditAction.RESOLVE,
                        ctx.principal,
                        file_id=d.file.id,
                        document_id=d.document.id,
                        workflow_id=workflow_id,
                    )
                    for d in (resolution.documents if audit_resolved else ())
                ),
                *(
                    audit.event(
                        AuditAction.RESOLVE,
                        ctx.principal,
                        outcome=u.reason.value,
                        workflow_id=workflow_id,
                        detail={"reference": u.reference[:200]},
                    )
                    for u in resolution.unresolved
                ),
            )
        return resolution

    def _resolve(self, ctx: RunContext, document_list: object) -> tuple[Resolution, bool]:
        """The resolution, and whether the bound workflow was found readable."""
        refs = coerce_document_references(document_list)
        rejected_names = [_named_file(r.text or r.raw) for r in refs.rejected]
        rejected = [
            UnresolvedReference(
                r.raw,
                UnresolvedReason.REJECTED_INPUT,
                f"{_MESSAGES[UnresolvedReason.REJECTED_INPUT]}: {r.reason}",
            )
            for r in refs.rejected
        ]
        workflow = ctx.bound_workflow
        if workflow is None:
            unresolved = [
                _unresolved(str(r), UnresolvedReason.NO_ACTIVE_WORKFLOW) for r in refs.references
            ]
            if refs.references:
                log.warning(
                    "no workflow available: %d reference(s) unresolved (no_active_workflow) for user %s",
                    len(refs.references),
                    ctx.principal.user_id,
                )
            return Resolution((), (*unresolved, *rejected), (), refs), False

        readable = False
        with self._uow() as uow:
            # The run's workflow object is not trusted: rights are checked on the stored one.
            stored = uow.workflows.get_workflow(workflow.id)
            suggestions: tuple[DocumentSuggestion, ...] = ()
            named: dict[str, list[DocumentSuggestion]] = {}
            names = [""] * (len(refs.references) + len(rejected))  # no lookup: no name named
            moves = False
            if stored is None or not self._access.can_on_workflow(
                ctx.principal, Action.READ, stored
            ):
                log.warning(
                    "workflow %s is absent or not readable by user %s: every reference unresolved",
                    workflow.id,
                    ctx.principal.user_id,
                )
                documents: list[ResolvedDocument] = []
                unresolved = [
                    _unresolved(str(r), UnresolvedReason.NOT_IN_WORKFLOW) for r in refs.references
                ]
            else:
                workflow = stored
                readable = True
                documents, unresolved, moves = self._lookup(uow, ctx, workflow, refs.references)
                names = [_named_file(u.reference) for u in unresolved] + rejected_names
                if unresolved or rejected:
                    gone = {
                        f"docItem:{u.document_id}"
                        for u in unresolved
                        if u.reason is UnresolvedReason.EXPIRED
                    }
                    suggestions = tuple(
                        s for s in self._suggest(uow, ctx, workflow) if s.reference not in gone
                    )
                    named = self._named(uow, ctx, workflow, names, gone)
        all_unresolved = _with_name_hints((*unresolved, *rejected), names, named)
        if all_unresolved:
            log.warning(
                "resolved %d of %d reference(s) in workflow %s; unresolved: %s",
                len(documents),
                len(refs.references) + len(refs.rejected),
                workflow.id,
                ", ".join(f"{u.reference} ({u.reason.value})" for u in all_unresolved[:20]),
            )
        resolution = Resolution(tuple(documents), all_unresolved, suggestions, refs, moves)
        return resolution, readable

    def _lookup(
        self,
        uow: UnitOfWork,
        ctx: RunContext,
        workflow: ChatWorkflow,
        references: Sequence[DocumentReference],
    ) -> tuple[list[ResolvedDocument], list[UnresolvedReference], bool]:
        """The documents found, the misses, and whether a read of one moves its expiry."""
        workflows = uow.workflows
        item_ids = [r.document_id for r in references if isinstance(r, DocumentItemReference)]
        by_id = workflows.get_documents(workflow.id, item_ids) if item_ids else {}
        labels = [r.label for r in references if isinstance(r, DocumentListReference)]
        by_label = workflows.documents_by_labels(workflow.id, labels) if labels else {}
        ambiguous: dict[str, AmbiguousName] = {}
        if len(by_label) < len(set(labels)):
            by_label, ambiguous = self._equivalent_labels(uow, workflow, labels, by_label)
        # A bare id that names no ChatDocument may be the FileItem id of the
        # tool-result block: it is looked up with the ``file:`` references. So is
        # a ``docItem:`` id that names none, for the hint its miss gets.
        file_ids = [
            r.file_id if isinstance(r, FileReference) else r.document_id
            for r in references
            if isinstance(r, FileReference)
            or (isinstance(r, DocumentItemReference) and r.document_id not in by_id)
        ]
        by_file = workflows.documents_by_files(workflow.id, file_ids) if file_ids else {}
        matches: list[tuple[str, list[ChatDocument]]] = []
        unresolved_early: list[tuple[str, AmbiguousName]] = []
        file_named: dict[str, list[ChatDocument]] = {}  # docItem:<a file id> -> its documents
        for ref in references:
            if isinstance(ref, DocumentItemReference):
                doc = by_id.get(ref.document_id)
                if doc is not None:
                    found = [doc]
                elif ref.bare:
                    found = by_file.get(ref.document_id, [])
                else:
                    found = []
                    if ref.document_id in by_file:
                        file_named[str(ref)] = by_file[ref.document_id]
            elif isinstance(ref, DocumentListReference):
                found = by_label.get(ref.label, [])
                if ref.label in ambiguous:
                    unresolved_early.append((str(ref), ambiguous[ref.label]))
            else:
                assert isinstance(ref, FileReference)
                found = by_file.get(ref.file_id, [])
            matches.append((str(ref), found))
        # One batch of FileItem lookups for every document found.
        files = uow.files.get_many(
            [doc.file_id for _, found in matches for doc in found]
            + [docs[0].file_id for docs in file_named.values()]
        )
        documents: list[ResolvedDocument] = []
        unresolved: list[UnresolvedReference] = []
        seen: set[str] = set()
        refused = dict(unresolved_early)
        for text, found in matches:
            if text in refused:
                why = UnresolvedReason.AMBIGUOUS_NAME
                unresolved.append(UnresolvedReference(text, why, str(refused[text])))
                continue
            if not found:
                miss = _unresolved(text, UnresolvedReason.NOT_IN_WORKFLOW)
                shown = file_named.get(text, [])
                item = files.get(shown[0].file_id) if shown else None
                if item is not None and self._check(ctx, item) is None:
                    hint = (
                        f"{text[len('docItem:') :]} is a file id, not a document id; "
                        f"its document(s): {_listed(shown)}"
                    )
                    miss = attrs.evolve(miss, message=f"{miss.message}; {hint}")
                unresolved.append(miss)
                continue
            for doc in found:
                if doc.id in seen:
                    continue
                item = files.get(doc.file_id)
                reason = self._check(ctx, item)
                if reason is None:
                    assert item is not None
                    seen.add(doc.id)
                    documents.append(ResolvedDocument(text, doc, item))
                else:
                    unresolved.append(_unresolved(text, reason, doc.id))
        moves = False
        if documents:
            documents, expired, moves = self._unexpired(uow, workflow, documents)
            unresolved.extend(expired)
        return documents, unresolved, moves

    def _unexpired(
        self, uow: UnitOfWork, workflow: ChatWorkflow, documents: list[ResolvedDocument]
    ) -> tuple[list[ResolvedDocument], list[UnresolvedReference], bool]:
        """The documents whose file has not expired, an ``expired`` entry for each that has (B5),
        and whether a ``last_read`` policy covers one of the kept ones (:func:`read_moves_expiry`).

        A file expires when its scope's retention policy says so and no legal
        hold names it or the workflow; it is unresolved at once, before gc
        removes any bytes. One query for the mandate's policies; more only
        when there are any.
        """
        policies = uow.retention.policies(workflow.scope.mandate_id)
        if not policies:
            return documents, [], False
        now = self._clock.now() if self._clock is not None else datetime.now(UTC)
        file_ids = [d.file.id for d in documents]
        reads = (
            uow.retention.last_reads(file_ids)
            if any(p.basis is RetentionBasis.LAST_READ for p in policies)
            else {}
        )
        due: dict[str, datetime] = {}
        for d in documents:
            policy = policy_for(d.file.scope, policies)
            if policy is not None:
                ends = policy.expires_at(d.file.created_at, reads.get(d.file.id))
                if ends <= now:
                    due[d.file.id] = ends
        if not due:
            return documents, [], read_moves_expiry(policies, [d.file for d in documents])
        held = uow.retention.held(list(due), [workflow.id])
        if workflow.id in held:
            return documents, [], read_moves_expiry(policies, [d.file for d in documents])
        kept: list[ResolvedDocument] = []
        expired: list[UnresolvedReference] = []
        for d in documents:
            end = due.get(d.file.id)
            if end is None or d.file.id in held:
                kept.append(d)
                continue
            expired.append(
                UnresolvedReference(
                    d.reference,
                    UnresolvedReason.EXPIRED,
                    f"{_MESSAGES[UnresolvedReason.EXPIRED]}: it expired on "
                    f"{end.isoformat(timespec='seconds')}",
                    d.document.id,
                    expired_at=end,
                )
            )
        return kept, expired, read_moves_expiry(policies, [d.file for d in kept])

    @staticmethod
    def _equivalent_labels(
        uow: UnitOfWork,
        workflow: ChatWorkflow,
        labels: Sequence[str],
        by_label: dict[str, list[ChatDocument]],
    ) -> tuple[dict[str, list[ChatDocument]], dict[str, AmbiguousName]]:
        """``by_label`` plus the labels found only in another Unicode spelling; the ambiguous ones.

        One more batch for every missed label's NFC and NFD spellings; a label
        that then has exactly one equivalent takes its documents.
        """
        missed = {label: spellings(label) for label in labels if label not in by_label}
        others = [s for forms in missed.values() for s in forms]
        if not others:
            return by_label, {}
        found = uow.workflows.documents_by_labels(workflow.id, others)
        merged = dict(by_label)
        ambiguous: dict[str, AmbiguousName] = {}
        for label, forms in missed.items():
            try:
                match = match_name(label, [s for s in forms if s in found], where="the workflow")
            except AmbiguousName as exc:
                ambiguous[label] = exc
                continue
            if match is not None:
                merged[label] = found[match]
        return merged, ambiguous

    def _check(self, ctx: RunContext, item: FileItem | None) -> UnresolvedReason | None:
        if item is None:
            return UnresolvedReason.FILE_MISSING
        if not self._access.can_read_file(ctx.principal, item):
            return UnresolvedReason.ACCESS_DENIED
        return None

    def _named(
        self,
        uow: UnitOfWork,
        ctx: RunContext,
        workflow: ChatWorkflow,
        names: Sequence[str],
        gone: set[str],
    ) -> dict[str, list[DocumentSuggestion]]:
        """The workflow's readable documents named by ``names``, keyed by name in NFC (one batch).

        Each name is asked for as sent and in its other Unicode spellings; the
        ``gone`` references (expired) are left out.
        """
        asked = [
            n for name in dict.fromkeys(n for n in names if n) for n in (name, *spellings(name))
        ]
        if not asked:
            return {}
        by_name = uow.workflows.documents_by_file_names(workflow.id, asked)
        docs = {doc.id: doc for found in by_name.values() for doc in found}
        files = uow.files.get_many([doc.file_id for doc in docs.values()])
        named: dict[str, list[DocumentSuggestion]] = {}
        for doc in docs.values():
            item = files.get(doc.file_id)
            if doc.reference in gone or item is None:
                continue
            if self._access.can_read_file(ctx.principal, item):
                named.setdefault(canonical(doc.file_name), []).append(
                    DocumentSuggestion(doc.reference, doc.file_name)
                )
        return named

    def _suggest(
        self, uow: UnitOfWork, ctx: RunContext, workflow: ChatWorkflow
    ) -> tuple[DocumentSuggestion, ...]:
        recent = uow.workflows.recent_documents(workflow.id, self._suggestions)
        files = uow.files.get_many([doc.file_id for doc in recent])
        out: list[DocumentSuggestion] = []
        for doc in recent:
            item = files.get(doc.file_id)
            if item is not None and self._access.can_read_file(ctx.principal, item):
                out.append(DocumentSuggestion(doc.reference, doc.file_name))
        return tuple(out)
