"""The docbinder tool set, defined once and rendered by every host framework (ADR 0016).

:class:`DocbinderToolset` wraps one agent :class:`~docbinder.application.binder.Run`
and offers the producing tools (``write_file``, ``download_from_data_source``,
``render_document``, ``create_chart``, ``generate_image``) and the consuming
tools (``read_documents``, ``list_documents``, ``read_file``,
``search_in_file_content``, ``get_file_info``, ``list_files``) as
:class:`ToolSpec` (name, description for the model, JSON Schema of the
arguments and of the structured result) plus one
``call(name, arguments) -> ToolOutcome``. Which files the file-level tools reach is the
host's :class:`FileScope`. It imports no agent framework: the
MCP server and the LangChain, OpenAI Agents and pydantic-ai integrations each
render the same specs in their own format.
"""

from docbinder.toolset.specs import (
    ERROR_SCHEMA,
    HANDLE_SENTENCE,
    OPTIONAL,
    OUTPUT_SCHEMAS,
    PRODUCED_FILE_SCHEMA,
    WORKFLOW_ARGUMENT,
    FileScope,
    ToolSpec,
    handle_schema,
    handle_spec,
)
from docbinder.toolset.toolset import (
    DEFAULT_MAX_IMAGE_BYTES,
    DEFAULT_MAX_TEXT_CHARS,
    MAX_LISTED_DOCUMENTS,
    NO_WORKFLOW_HINT,
    DocbinderToolset,
    ToolOutcome,
    file_info_text,
    produced_file,
    public_message,
    read_documents_outcome,
    unavailable_tools,
    unknown_file,
    workflow_documents,
    workflow_files,
)

__all__ = [
    "DEFAULT_MAX_IMAGE_BYTES",
    "DEFAULT_MAX_TEXT_CHARS",
    "ERROR_SCHEMA",
    "HANDLE_SENTENCE",
    "MAX_LISTED_DOCUMENTS",
    "NO_WORKFLOW_HINT",
    "OPTIONAL",
    "OUTPUT_SCHEMAS",
    "PRODUCED_FILE_SCHEMA",
    "WORKFLOW_ARGUMENT",
    "DocbinderToolset",
    "FileScope",
    "ToolOutcome",
    "ToolSpec",
    "file_info_text",
    "handle_schema",
    "handle_spec",
    "produced_file",
    "public_message",
    "read_documents_outcome",
    "unavailable_tools",
    "unknown_file",
    "workflow_documents",
    "workflow_files",
]
