"""docbinder: make files produced by AI-agent tools usable by the tools that come after them."""

from docbinder.domain.errors import (
    AccessDenied,
    BlobMissing,
    ConfigurationError,
    DocbinderError,
    FileItemNotFound,
    InvalidInput,
    MissingExtra,
    NoActiveWorkflow,
    NotFound,
    SizeLimitExceeded,
    StorageError,
    WorkflowNotFound,
)
from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    ContentKind,
    ContentPart,
    FileItem,
    Principal,
    Scope,
)
from docbinder.domain.parsing import coerce_document_references
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReferenceList,
    FileReference,
    RejectedReference,
)

__all__ = [
    "AccessDenied",
    "BlobMissing",
    "ChatDocument",
    "ChatMessage",
    "ChatWorkflow",
    "ConfigurationError",
    "ContentKind",
    "ContentPart",
    "DocbinderError",
    "DocumentItemReference",
    "DocumentListReference",
    "DocumentReferenceList",
    "FileItem",
    "FileItemNotFound",
    "FileReference",
    "InvalidInput",
    "MissingExtra",
    "NoActiveWorkflow",
    "NotFound",
    "Principal",
    "RejectedReference",
    "Scope",
    "SizeLimitExceeded",
    "StorageError",
    "WorkflowNotFound",
    "coerce_document_references",
]
