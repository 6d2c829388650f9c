"""Use cases of docbinder, written against the ports only."""

from docbinder.application.attach import AttachFiles, attach_file_as_chat_document
from docbinder.application.binder import DocBinder, Run, ToolFileResult
from docbinder.application.check_duplicate import CheckDuplicate
from docbinder.application.content import ContentResult, DocumentContent, GetContent
from docbinder.application.context import RunContext
from docbinder.application.delete_file import DeleteFile
from docbinder.application.get_file import GetFile
from docbinder.application.produce import ProducedFile, ProduceFile
from docbinder.application.resolve import (
    Resolution,
    ResolvedDocument,
    ResolveDocumentList,
    UnresolvedReason,
    UnresolvedReference,
)
from docbinder.application.results import format_tool_file_result
from docbinder.application.store_file import StoredFile, StoreFile
from docbinder.application.versions import FileVersions, StoredVersion
from docbinder.application.workflows import Workflows

__all__ = [
    "AttachFiles",
    "CheckDuplicate",
    "ContentResult",
    "DeleteFile",
    "DocBinder",
    "DocumentContent",
    "FileVersions",
    "GetContent",
    "GetFile",
    "ProduceFile",
    "ProducedFile",
    "Resolution",
    "ResolveDocumentList",
    "ResolvedDocument",
    "Run",
    "RunContext",
    "StoreFile",
    "StoredFile",
    "StoredVersion",
    "ToolFileResult",
    "UnresolvedReason",
    "UnresolvedReference",
    "Workflows",
    "attach_file_as_chat_document",
    "format_tool_file_result",
]
