"""docbinder: make files produced by AI-agent tools usable by the tools that come after them.

What a host needs is importable from here: :func:`build_binder` (from
:class:`Settings`) or :func:`compose_binder` (over its own ports) give a
:class:`DocBinder`; ``binder.start_run(principal, workflow_id)`` gives a
:class:`Run`; close the binder with ``with build_binder(...) as binder:``.
``build_binder`` and ``compose_binder`` are loaded on first use, so
``import docbinder`` builds no adapter and imports no optional dependency.

docbinder logs through the ``docbinder`` logger and, as a library, prints
nothing unless the host configures logging (a ``NullHandler`` is attached, as
the Python logging HOWTO advises for libraries); the command line shows
warnings itself.
"""

import logging
from typing import TYPE_CHECKING, Any

from docbinder.application.binder import DocBinder, Run, ToolFileResult
from docbinder.application.steps.storing import StoredFile
from docbinder.application.use_cases.get_content import ContentResult
from docbinder.application.use_cases.resolve_document_list import Resolution, UnresolvedReason
from docbinder.config import Settings
from docbinder.domain.access import Action, Resource, ResourceKind
from docbinder.domain.counters import CounterLevel, WorkflowCounters
from docbinder.domain.errors import (
    AccessDenied,
    BinderClosed,
    BlobMissing,
    ConfigurationError,
    Conflict,
    CountersWouldGoBack,
    DocbinderError,
    DuplicateFileItem,
    DuplicateLabel,
    FileItemNotFound,
    FileStillReferenced,
    InvalidInput,
    MissingExtra,
    NoActiveWorkflow,
    NotFound,
    SizeLimitExceeded,
    StorageError,
    StoreMoved,
    UnsafeOperation,
    VersionTaken,
    WorkflowNotFound,
)
from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    ContentKind,
    ContentPart,
    FileItem,
    FileVersion,
    Principal,
    Scope,
    VersionSeries,
)
from docbinder.domain.parsing import coerce_document_references
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReference,
    DocumentReferenceList,
    FileReference,
    RejectedReference,
)

if TYPE_CHECKING:
    from docbinder.container import build_binder, compose_binder

_LAZY = {"build_binder", "compose_binder"}


def __getattr__(name: str) -> Any:
    """``build_binder`` and ``compose_binder``, imported from :mod:`docbinder.container` on first use."""
    if name in _LAZY:
        from docbinder import container

        return getattr(container, name)
    raise AttributeError(f"module 'docbinder' has no attribute {name!r}")


__all__ = [
    "AccessDenied",
    "Action",
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
    "DocBinder",
    "DocbinderError",
    "DocumentItemReference",
    "DocumentListReference",
    "DocumentReference",
    "DocumentReferenceList",
    "DuplicateFileItem",
    "DuplicateLabel",
    "FileItem",
    "FileItemNotFound",
    "FileReference",
    "FileStillReferenced",
    "FileVersion",
    "InvalidInput",
    "MissingExtra",
    "NoActiveWorkflow",
    "NotFound",
    "Principal",
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
    "ToolFileResult",
    "UnresolvedReason",
    "UnsafeOperation",
    "VersionSeries",
    "VersionTaken",
    "WorkflowCounters",
    "WorkflowNotFound",
    "build_binder",
    "coerce_document_references",
    "compose_binder",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
