"""The docbinder tool set, defined once and rendered by every host framework (ADR 0016).

:class:`DocbinderToolset` wraps one agent :class:`~docbinder.application.binder.Run`
and offers the producing tools (``write_file``, ``download_from_data_source``,
``render_document``, ``create_chart``, ``generate_image``) and the consuming
tools (``read_documents``, ``list_documents``, ``read_file``,
``search_in_file_content``, ``get_file_info``, ``list_files``) as
:class:`ToolSpec` (name, description for the model, JSON Schema) plus one
``call(name, arguments) -> ToolOutcome``. It imports no agent framework: the
MCP server and the LangChain, OpenAI Agents and pydantic-ai integrations each
render the same specs in their own format.
"""

from docbinder.toolset.specs import OPTIONAL, ToolSpec
from docbinder.toolset.toolset import (
    DEFAULT_MAX_IMAGE_BYTES,
    DEFAULT_MAX_TEXT_CHARS,
    MAX_LISTED_DOCUMENTS,
    DocbinderToolset,
    ToolOutcome,
    file_info_text,
    read_documents_outcome,
    workflow_documents,
)

__all__ = [
    "DEFAULT_MAX_IMAGE_BYTES",
    "DEFAULT_MAX_TEXT_CHARS",
    "MAX_LISTED_DOCUMENTS",
    "OPTIONAL",
    "DocbinderToolset",
    "ToolOutcome",
    "ToolSpec",
    "file_info_text",
    "read_documents_outcome",
    "workflow_documents",
]
