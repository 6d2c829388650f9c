"""docbinder: make files produced by AI-agent tools usable by the tools that come after them.

What a host needs is importable from here: :func:`build_binder` (from
:class:`Settings`) or :func:`compose_binder` (over its own ports) give a
:class:`DocBinder`; ``binder.start_run(principal, workflow_id)`` gives a
:class:`Run`; close the binder with ``with build_binder(...) as binder:``.
Every name is loaded from its module on first use (PEP 562 ``__getattr__``),
so ``import docbinder`` imports none of them: it builds no adapter, imports no
optional dependency and keeps ``docbinder --version`` fast (ADR 0052).

docbinder logs through the ``docbinder`` logger and, as a library, prints
nothing unless the host configures logging (a ``NullHandler`` is attached, as
the Python logging HOWTO advises for libraries); the command line shows
warnings itself.
"""

import importlib
import logging
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
"""This package's version; ``pyproject.toml`` reads it from here."""

if TYPE_CHECKING:
    from docbinder.application import (
        ContentResult,
        DocBinder,
        NotAttached,
        NotAttachedCause,
        Resolution,
        Run,
        StoredFile,
        ToolFileResult,
        UnresolvedReason,
    )
    from docbinder.application.provenance import ToolCall, tool_call
    from docbinder.config import Settings
    from docbinder.container import build_binder, compose_binder
    from docbinder.domain.access import Action, Resource, ResourceKind
    from docbinder.domain.counters import CounterLevel, WorkflowCounters
    from docbinder.domain.errors import (
        AccessDenied,
        AmbiguousName,
        AuditEventUnreadable,
        BinderClosed,
        BlobMissing,
        ConfigurationError,
        Conflict,
        CountersWouldGoBack,
        DatabaseCloned,
        DocbinderError,
        DuplicateFileItem,
        DuplicateLabel,
        FileExpired,
        FileItemNotFound,
        FileStillReferenced,
        FileUnderLegalHold,
        InvalidInput,
        MissingExtra,
        NoActiveWorkflow,
        NotFound,
        ProviderError,
        ProviderUploadForbidden,
        QuotaExceeded,
        SizeLimitExceeded,
        StorageError,
        StoreMoved,
        TransactionAborted,
        UnsafeOperation,
        VersionTaken,
        WorkflowNotFound,
    )
    from docbinder.domain.governance import Quota
    from docbinder.domain.model import (
        ChatDocument,
        ChatMessage,
        ChatWorkflow,
        ContentKind,
        ContentPart,
        FileItem,
        FileVersion,
        PageCoverage,
        Principal,
        Provenance,
        Scope,
        VersionSeries,
    )
    from docbinder.domain.parsing import coerce_document_references
    from docbinder.domain.providers import ProviderFileRef
    from docbinder.domain.references import (
        DocumentItemReference,
        DocumentListReference,
        DocumentReference,
        DocumentReferenceList,
        FileReference,
        RejectedReference,
    )

_EXPORTS: dict[str, str] = {
    "AccessDenied": "docbinder.domain.errors",
    "AmbiguousName": "docbinder.domain.errors",
    "AuditEventUnreadable": "docbinder.domain.errors",
    "Action": "docbinder.domain.access",
    "BinderClosed": "docbinder.domain.errors",
    "BlobMissing": "docbinder.domain.errors",
    "ChatDocument": "docbinder.domain.model",
    "ChatMessage": "docbinder.domain.model",
    "ChatWorkflow": "docbinder.domain.model",
    "ConfigurationError": "docbinder.domain.errors",
    "Conflict": "docbinder.domain.errors",
    "ContentKind": "docbinder.domain.model",
    "ContentPart": "docbinder.domain.model",
    "ContentResult": "docbinder.application",
    "CounterLevel": "docbinder.domain.counters",
    "CountersWouldGoBack": "docbinder.domain.errors",
    "DocBinder": "docbinder.application",
    "DocbinderError": "docbinder.domain.errors",
    "DocumentItemReference": "docbinder.domain.references",
    "DocumentListReference": "docbinder.domain.references",
    "DocumentReference": "docbinder.domain.references",
    "DocumentReferenceList": "docbinder.domain.references",
    "DuplicateFileItem": "docbinder.domain.errors",
    "DuplicateLabel": "docbinder.domain.errors",
    "FileExpired": "docbinder.domain.errors",
    "FileItem": "docbinder.domain.model",
    "FileItemNotFound": "docbinder.domain.errors",
    "FileReference": "docbinder.domain.references",
    "FileStillReferenced": "docbinder.domain.errors",
    "FileUnderLegalHold": "docbinder.domain.errors",
    "FileVersion": "docbinder.domain.model",
    "PageCoverage": "docbinder.domain.model",
    "InvalidInput": "docbinder.domain.errors",
    "MissingExtra": "docbinder.domain.errors",
    "NoActiveWorkflow": "docbinder.domain.errors",
    "NotFound": "docbinder.domain.errors",
    "Principal": "docbinder.domain.model",
    "Provenance": "docbinder.domain.model",
    "ProviderError": "docbinder.domain.errors",
    "ProviderFileRef": "docbinder.domain.providers",
    "ProviderUploadForbidden": "docbinder.domain.errors",
    "Quota": "docbinder.domain.governance",
    "QuotaExceeded": "docbinder.domain.errors",
    "ToolCall": "docbinder.application.provenance",
    "tool_call": "docbinder.application.provenance",
    "RejectedReference": "docbinder.domain.references",
    "Resolution": "docbinder.application",
    "Resource": "docbinder.domain.access",
    "ResourceKind": "docbinder.domain.access",
    "Run": "docbinder.application",
    "Scope": "docbinder.domain.model",
    "Settings": "docbinder.config",
    "SizeLimitExceeded": "docbinder.domain.errors",
    "StorageError": "docbinder.domain.errors",
    "DatabaseCloned": "docbinder.domain.errors",
    "StoreMoved": "docbinder.domain.errors",
    "TransactionAborted": "docbinder.domain.errors",
    "StoredFile": "docbinder.application",
    "NotAttached": "docbinder.application",
    "NotAttachedCause": "docbinder.application",
    "ToolFileResult": "docbinder.application",
    "UnresolvedReason": "docbinder.application",
    "UnsafeOperation": "docbinder.domain.errors",
    "VersionSeries": "docbinder.domain.model",
    "VersionTaken": "docbinder.domain.errors",
    "WorkflowCounters": "docbinder.domain.counters",
    "WorkflowNotFound": "docbinder.domain.errors",
    "build_binder": "docbinder.container",
    "coerce_document_references": "docbinder.domain.parsing",
    "compose_binder": "docbinder.container",
}
"""Public name -> the module it is loaded from on first use."""


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use and kept."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'docbinder' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "AccessDenied",
    "Action",
    "AmbiguousName",
    "AuditEventUnreadable",
    "BinderClosed",
    "BlobMissing",
    "ChatDocument",
    "ChatMessage",
    "ChatWorkflow",
    "ConfigurationError",
    "Conflict",
    "ContentKind",
    "ContentPart",
    "ContentResult",
    "CounterLevel",
    "CountersWouldGoBack",
    "DatabaseCloned",
    "DocBinder",
    "DocbinderError",
    "DocumentItemReference",
    "DocumentListReference",
    "DocumentReference",
    "DocumentReferenceList",
    "DuplicateFileItem",
    "DuplicateLabel",
    "FileExpired",
    "FileItem",
    "FileItemNotFound",
    "FileReference",
    "FileStillReferenced",
    "FileUnderLegalHold",
    "FileVersion",
    "InvalidInput",
    "MissingExtra",
    "NoActiveWorkflow",
    "NotAttached",
    "NotAttachedCause",
    "NotFound",
    "PageCoverage",
    "Principal",
    "Provenance",
    "ProviderError",
    "ProviderFileRef",
    "ProviderUploadForbidden",
    "Quota",
    "QuotaExceeded",
    "RejectedReference",
    "Resolution",
    "Resource",
    "ResourceKind",
    "Run",
    "Scope",
    "Settings",
    "SizeLimitExceeded",
    "StorageError",
    "StoreMoved",
    "StoredFile",
    "ToolCall",
    "ToolFileResult",
    "TransactionAborted",
    "UnresolvedReason",
    "UnsafeOperation",
    "VersionSeries",
    "VersionTaken",
    "WorkflowCounters",
    "WorkflowNotFound",
    "__version__",
    "build_binder",
    "coerce_document_references",
    "compose_binder",
    "tool_call",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
