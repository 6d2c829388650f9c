"""The application layer of docbinder, written against the ports only.

- :mod:`~docbinder.application.use_cases`: one use case per module, named as the
  design names it (:class:`StoreFile` in ``use_cases/store_file.py``).
- :mod:`~docbinder.application.steps`: the steps several use cases share and
  that have no design name of their own (hashing, storing, access decisions,
  blob rules, the content switch).
- The two facades: :class:`DocBinder` and its :class:`Run` (``binder.py``, with
  the :class:`UseCases` bundle the binder is built from), and their async twins
  (``aio.py``), over the run context (``context.py``, SPEC C4).

The composition root (:mod:`docbinder.container`) builds the use cases, their
bundle and the facades from them. ``docs/architecture.md`` walks the flows.

Names are imported on first use (PEP 562 ``__getattr__``): importing the package
or one of its modules costs only what that module needs, so a command that lists
files does not load every use case.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docbinder.application.binder import (
        DocBinder,
        FileContentUpdates,
        FileVersions,
        Run,
        ToolFileResult,
        UseCases,
    )
    from docbinder.application.context import RunContext
    from docbinder.application.steps.content_switch import FileUpdate
    from docbinder.application.steps.results import (
        NotAttached,
        NotAttachedCause,
        format_tool_file_result,
    )
    from docbinder.application.steps.storing import FileStorer, StoredFile
    from docbinder.application.use_cases.append_file_content import AppendFileContent
    from docbinder.application.use_cases.attach_file import (
        AttachFile,
        PreparedAttach,
        attach_file_as_chat_document,
    )
    from docbinder.application.use_cases.check_duplicate import CheckDuplicate, DuplicateCheck
    from docbinder.application.use_cases.collect_garbage import CollectGarbage
    from docbinder.application.use_cases.count_file_references import CountFileReferences
    from docbinder.application.use_cases.create_workflow import CreateWorkflow
    from docbinder.application.use_cases.delete_file import DeleteFile
    from docbinder.application.use_cases.delete_file_versions import DeleteFileVersions
    from docbinder.application.use_cases.find_deleted_files import FindDeletedFiles
    from docbinder.application.use_cases.get_content import (
        ContentResult,
        DocumentContent,
        GetContent,
    )
    from docbinder.application.use_cases.get_file import GetFile
    from docbinder.application.use_cases.get_file_for_update import GetFileForUpdate
    from docbinder.application.use_cases.get_file_version import GetFileVersion
    from docbinder.application.use_cases.get_latest_file_version import GetLatestFileVersion
    from docbinder.application.use_cases.get_workflow import GetWorkflow
    from docbinder.application.use_cases.list_file_versions import ListFileVersions
    from docbinder.application.use_cases.list_files import ListFiles
    from docbinder.application.use_cases.list_latest_file_versions import ListLatestFileVersions
    from docbinder.application.use_cases.list_messages import ListMessages
    from docbinder.application.use_cases.list_workflows import ListWorkflows
    from docbinder.application.use_cases.manage_quotas import ManageQuotas
    from docbinder.application.use_cases.open_file import OpenFile
    from docbinder.application.use_cases.open_file_version import OpenFileVersion
    from docbinder.application.use_cases.persist_action_result import PersistActionResult
    from docbinder.application.use_cases.produce_file import ProducedFile, ProduceFile
    from docbinder.application.use_cases.replace_file_content import ReplaceFileContent
    from docbinder.application.use_cases.resolve_document_list import (
        Resolution,
        ResolvedDocument,
        ResolveDocumentList,
        UnresolvedReason,
        UnresolvedReference,
    )
    from docbinder.application.use_cases.save_file_version import SaveFileVersion, StoredVersion
    from docbinder.application.use_cases.store_file import StoreFile

_WHERE: dict[str, str] = {
    "AppendFileContent": "docbinder.application.use_cases.append_file_content",
    "AttachFile": "docbinder.application.use_cases.attach_file",
    "CheckDuplicate": "docbinder.application.use_cases.check_duplicate",
    "CollectGarbage": "docbinder.application.use_cases.collect_garbage",
    "ContentResult": "docbinder.application.use_cases.get_content",
    "CountFileReferences": "docbinder.application.use_cases.count_file_references",
    "CreateWorkflow": "docbinder.application.use_cases.create_workflow",
    "DeleteFile": "docbinder.application.use_cases.delete_file",
    "DeleteFileVersions": "docbinder.application.use_cases.delete_file_versions",
    "DocBinder": "docbinder.application.binder",
    "DocumentContent": "docbinder.application.use_cases.get_content",
    "DuplicateCheck": "docbinder.application.use_cases.check_duplicate",
    "FileContentUpdates": "docbinder.application.binder",
    "FileStorer": "docbinder.application.steps.storing",
    "FileUpdate": "docbinder.application.steps.content_switch",
    "FileVersions": "docbinder.application.binder",
    "FindDeletedFiles": "docbinder.application.use_cases.find_deleted_files",
    "GetContent": "docbinder.application.use_cases.get_content",
    "GetFile": "docbinder.application.use_cases.get_file",
    "GetFileForUpdate": "docbinder.application.use_cases.get_file_for_update",
    "GetFileVersion": "docbinder.application.use_cases.get_file_version",
    "GetLatestFileVersion": "docbinder.application.use_cases.get_latest_file_version",
    "GetWorkflow": "docbinder.application.use_cases.get_workflow",
    "ListFileVersions": "docbinder.application.use_cases.list_file_versions",
    "ListFiles": "docbinder.application.use_cases.list_files",
    "ListLatestFileVersions": "docbinder.application.use_cases.list_latest_file_versions",
    "ListMessages": "docbinder.application.use_cases.list_messages",
    "ListWorkflows": "docbinder.application.use_cases.list_workflows",
    "ManageQuotas": "docbinder.application.use_cases.manage_quotas",
    "NotAttached": "docbinder.application.steps.results",
    "NotAttachedCause": "docbinder.application.steps.results",
    "OpenFile": "docbinder.application.use_cases.open_file",
    "OpenFileVersion": "docbinder.application.use_cases.open_file_version",
    "PersistActionResult": "docbinder.application.use_cases.persist_action_result",
    "PreparedAttach": "docbinder.application.use_cases.attach_file",
    "ProduceFile": "docbinder.application.use_cases.produce_file",
    "ProducedFile": "docbinder.application.use_cases.produce_file",
    "ReplaceFileContent": "docbinder.application.use_cases.replace_file_content",
    "Resolution": "docbinder.application.use_cases.resolve_document_list",
    "ResolveDocumentList": "docbinder.application.use_cases.resolve_document_list",
    "ResolvedDocument": "docbinder.application.use_cases.resolve_document_list",
    "Run": "docbinder.application.binder",
    "RunContext": "docbinder.application.context",
    "SaveFileVersion": "docbinder.application.use_cases.save_file_version",
    "StoreFile": "docbinder.application.use_cases.store_file",
    "StoredFile": "docbinder.application.steps.storing",
    "StoredVersion": "docbinder.application.use_cases.save_file_version",
    "ToolFileResult": "docbinder.application.binder",
    "UnresolvedReason": "docbinder.application.use_cases.resolve_document_list",
    "UnresolvedReference": "docbinder.application.use_cases.resolve_document_list",
    "UseCases": "docbinder.application.binder",
    "attach_file_as_chat_document": "docbinder.application.use_cases.attach_file",
    "format_tool_file_result": "docbinder.application.steps.results",
}
"""Where each public name of the package lives."""


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use; ``AttributeError`` else."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AppendFileContent",
    "AttachFile",
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
    "ManageQuotas",
    "NotAttached",
    "NotAttachedCause",
    "OpenFile",
    "OpenFileVersion",
    "PersistActionResult",
    "PreparedAttach",
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
    "UseCases",
    "attach_file_as_chat_document",
    "format_tool_file_result",
]
