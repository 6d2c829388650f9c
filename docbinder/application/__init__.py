"""Use cases of docbinder, written against the ports only: one use case per module.

Each use case is a class named as the design names it, in a module of the same
name (:class:`StoreFile` in ``store_file.py``), callable with one entry point.
The composition root (:mod:`docbinder.container`) builds them and the
:class:`DocBinder` facade from them.
"""

from docbinder.application.append_file_content import AppendFileContent
from docbinder.application.attach_file import AttachFile, attach_file_as_chat_document
from docbinder.application.attaching import Attacher
from docbinder.application.binder import (
    DocBinder,
    FileContentUpdates,
    FileVersions,
    Run,
    ToolFileResult,
)
from docbinder.application.check_duplicate import CheckDuplicate
from docbinder.application.collect_garbage import CollectGarbage
from docbinder.application.content_switch import FileUpdate
from docbinder.application.context import RunContext
from docbinder.application.count_file_references import CountFileReferences
from docbinder.application.create_workflow import CreateWorkflow
from docbinder.application.delete_file import DeleteFile
from docbinder.application.delete_file_versions import DeleteFileVersions
from docbinder.application.duplicate_rules import DuplicateCheck
from docbinder.application.find_deleted_files import FindDeletedFiles
from docbinder.application.get_content import ContentResult, DocumentContent, GetContent
from docbinder.application.get_file import GetFile
from docbinder.application.get_file_for_update import GetFileForUpdate
from docbinder.application.get_file_version import GetFileVersion
from docbinder.application.get_latest_file_version import GetLatestFileVersion
from docbinder.application.get_workflow import GetWorkflow
from docbinder.application.list_file_versions import ListFileVersions
from docbinder.application.list_files import ListFiles
from docbinder.application.list_latest_file_versions import ListLatestFileVersions
from docbinder.application.list_messages import ListMessages
from docbinder.application.list_workflows import ListWorkflows
from docbinder.application.open_file import OpenFile
from docbinder.application.open_file_version import OpenFileVersion
from docbinder.application.persist_action_result import PersistActionResult
from docbinder.application.produce_file import ProducedFile, ProduceFile
from docbinder.application.replace_file_content import ReplaceFileContent
from docbinder.application.resolve_document_list import (
    Resolution,
    ResolvedDocument,
    ResolveDocumentList,
    UnresolvedReason,
    UnresolvedReference,
)
from docbinder.application.results import format_tool_file_result
from docbinder.application.save_file_version import SaveFileVersion, StoredVersion
from docbinder.application.store_file import StoreFile
from docbinder.application.storing import FileStorer, StoredFile

__all__ = [
    "AppendFileContent",
    "AttachFile",
    "Attacher",
    "CheckDuplicate",
    "CollectGarbage",
    "ContentResult",
    "CountFileReferences",
    "CreateWorkflow",
    "DeleteFile",
    "DeleteFileVersions",
    "DocBinder",
    "DocumentContent",
    "DuplicateCheck",
    "FileContentUpdates",
    "FileStorer",
    "FileUpdate",
    "FileVersions",
    "FindDeletedFiles",
    "GetContent",
    "GetFile",
    "GetFileForUpdate",
    "GetFileVersion",
    "GetLatestFileVersion",
    "GetWorkflow",
    "ListFileVersions",
    "ListFiles",
    "ListLatestFileVersions",
    "ListMessages",
    "ListWorkflows",
    "OpenFile",
    "OpenFileVersion",
    "PersistActionResult",
    "ProduceFile",
    "ProducedFile",
    "ReplaceFileContent",
    "Resolution",
    "ResolveDocumentList",
    "ResolvedDocument",
    "Run",
    "RunContext",
    "SaveFileVersion",
    "StoreFile",
    "StoredFile",
    "StoredVersion",
    "ToolFileResult",
    "UnresolvedReason",
    "UnresolvedReference",
    "attach_file_as_chat_document",
    "format_tool_file_result",
]
