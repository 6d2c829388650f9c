"""Names, descriptions and JSON schemas of the docbinder tools, defined once for every host.

Each :class:`ToolSpec` is what a host framework (MCP, LangChain, the OpenAI
Agents SDK, pydantic-ai, ADK) shows a language model: a name, a description
written for the model, and the JSON Schema (draft 2020-12 subset) of the
arguments.

Schemas follow OpenAI's structured-outputs "strict mode" rules
(https://platform.openai.com/docs/guides/function-calling, "strict mode"): an
object schema lists every property in ``required`` and sets
``"additionalProperties": false``; an optional argument is nullable
(``"type": ["integer", "null"]``) and ``null`` means "use the default". The
tool set also accepts a missing optional argument, so hosts that leave optional
arguments out work as well. One schema cannot be strict:
``read_documents.documentList`` accepts any JSON value (a string, a list, an
object: every shape the reference parser accepts), which strict mode cannot
express; its :attr:`ToolSpec.strict` is ``False``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from docbinder.tools.charts import CHART_KINDS, MAX_POINTS, MAX_SERIES
from docbinder.tools.consuming import DEFAULT_MAX_CHARS, DEFAULT_SEARCH_LIMIT
from docbinder.tools.images import MAX_IMAGES
from docbinder.tools.producing import DOCUMENT_FORMATS


@attrs.frozen
class ToolSpec:
    """One tool as a host framework presents it to a model.

    ``name`` is the tool name (``write_file``, ...); ``description`` is written
    for a language model; ``parameters`` is the JSON Schema of the arguments
    (an object schema, see the module documentation); ``produces_files`` is
    true for tools that store files and answer with ``docItem:`` references;
    ``read_only`` is true for tools that change nothing; ``strict`` says
    whether ``parameters`` meets OpenAI strict mode.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    produces_files: bool
    read_only: bool
    strict: bool = True


_REF_HINT: Final = (
    "The answer has one block per new file: `<Verb> '<name>' (<size> bytes)`, "
    "`documentList ref: docItem:<id>` and `file id: <id>`. To use a file later, copy its "
    "`docItem:<id>` reference exactly into the documentList of read_documents (or of any "
    "tool that takes a documentList); use the `file id` with read_file, "
    "search_in_file_content and get_file_info."
)


def _obj(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def _string(
    description: str, *, nullable: bool = False, enum: Sequence[str] = ()
) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": ["string", "null"] if nullable else "string",
        "description": description,
    }
    if enum:
        schema["enum"] = [*enum, None] if nullable else list(enum)
    return schema


def _integer(description: str) -> dict[str, Any]:
    return {"type": ["integer", "null"], "description": description}


def _label_schema() -> dict[str, Any]:
    return {"anyOf": [{"type": "string"}, {"type": "number"}]}


OPTIONAL: Final[Mapping[str, frozenset[str]]] = {
    "write_file": frozenset({"encoding"}),
    "download_from_data_source": frozenset(),
    "render_document": frozenset({"formats", "title"}),
    "create_chart": frozenset({"title", "x_label", "y_label", "name"}),
    "generate_image": frozenset({"n", "size", "name"}),
    "read_documents": frozenset(),
    "list_documents": frozenset(),
    "read_file": frozenset({"max_chars"}),
    "search_in_file_content": frozenset({"file_ids", "limit"}),
    "get_file_info": frozenset(),
    "list_files": frozenset({"limit"}),
}
"""Per tool, the arguments that may be ``null`` or left out (their default applies)."""


def write_file_spec() -> ToolSpec:
    """``write_file(name, content, encoding)``."""
    return ToolSpec(
        "write_file",
        "Create a new file from text you write (Markdown, CSV, JSON, code, ...) and attach it "
        "to the active workflow. Pass `name`, a file name with extension such as "
        "'summary.md' (no folders), and `content`. Leave `encoding` null (or 'text') to store "
        "the content as UTF-8 text; set it to 'base64' only when `content` is base64-encoded "
        "binary data. " + _REF_HINT,
        _obj(
            {
                "name": _string("File name with extension, e.g. 'report.md'."),
                "content": _string("The file content: text, or base64 when encoding is 'base64'."),
                "encoding": _string(
                    "'text' (default) or 'base64'.", nullable=True, enum=("text", "base64")
                ),
            }
        ),
        produces_files=True,
        read_only=False,
    )


def download_spec(services: Sequence[str]) -> ToolSpec:
    """``download_from_data_source(service, path)`` over the configured ``services``."""
    listed = ", ".join(f"'{s}'" for s in services)
    return ToolSpec(
        "download_from_data_source",
        "Fetch one file from a configured data source and attach it to the active workflow. "
        f"Pass `service`, one of {listed}, and `path`: the file's path relative to that "
        "source (or its URL for a web source). " + _REF_HINT,
        _obj(
            {
                "service": _string("The data source to fetch from.", enum=tuple(services)),
                "path": _string("Path of the file inside the data source, or its URL."),
            }
        ),
        produces_files=True,
        read_only=False,
    )


def render_document_spec() -> ToolSpec:
    """``render_document(markdown, name, formats, title)``."""
    return ToolSpec(
        "render_document",
        "Render Markdown (CommonMark with tables) into a finished document: an HTML page "
        "and/or a PDF. Pass `markdown`, `name` (the base file name without extension, e.g. "
        "'quarterly-report'), `formats` (a list of 'html' and/or 'pdf'; null means ['html']) "
        "and `title` (null: the first heading). Each format becomes its own file. " + _REF_HINT,
        _obj(
            {
                "markdown": _string("The document as Markdown."),
                "name": _string("Base file name without extension."),
                "formats": {
                    "type": ["array", "null"],
                    "items": {"type": "string", "enum": list(DOCUMENT_FORMATS)},
                    "description": "Formats to produce; null means ['html'].",
                },
                "title": _string("Document title; null: the first heading.", nullable=True),
            }
        ),
        produces_files=True,
        read_only=False,
    )


def create_chart_spec() -> ToolSpec:
    """``create_chart(kind, series, title, x_label, y_label, name)``."""
    return ToolSpec(
        "create_chart",
        "Draw a bar, line or pie chart as a PNG image and attach it to the active workflow. "
        "Pass `kind` ('bar', 'line' or 'pie') and `series`: a list of "
        '{"name": ..., "labels": [...], "values": [...]} with as many labels as values '
        f"(at most {MAX_SERIES} series of {MAX_POINTS} points; every series of a bar or line "
        "chart has the same labels; a pie chart has exactly one series of non-negative "
        "values). `title`, `x_label`, `y_label` and `name` (the file name, default the "
        "title) may be null. " + _REF_HINT,
        _obj(
            {
                "kind": _string("Chart kind.", enum=CHART_KINDS),
                "series": {
                    "type": "array",
                    "description": "The data series.",
                    "items": _obj(
                        {
                            "name": _string("Series name (legend).", nullable=True),
                            "labels": {
                                "type": "array",
                                "items": _label_schema(),
                                "description": "Category labels (x axis or pie slices).",
                            },
                            "values": {
                                "type": "array",
                                "items": {"type": "number"},
                                "description": "One number per label.",
                            },
                        }
                    ),
                },
                "title": _string("Chart title.", nullable=True),
                "x_label": _string("Label of the x axis.", nullable=True),
                "y_label": _string("Label of the y axis.", nullable=True),
                "name": _string("File name (without .png); default: the title.", nullable=True),
            }
        ),
        produces_files=True,
        read_only=False,
    )


def generate_image_spec() -> ToolSpec:
    """``generate_image(prompt, n, size, name)``."""
    return ToolSpec(
        "generate_image",
        "Generate images from a text prompt with the configured image service and attach "
        f"each to the active workflow. Pass `prompt`; `n` (1 to {MAX_IMAGES}, default 1), "
        "`size` (like '512x512', default '512x512') and `name` (base file name, default "
        "'image') may be null. " + _REF_HINT,
        _obj(
            {
                "prompt": _string("What the image should show."),
                "n": _integer(f"Number of images, 1 to {MAX_IMAGES}; null means 1."),
                "size": _string("'<width>x<height>' or 'auto'; null means 512x512.", nullable=True),
                "name": _string("Base file name; null means 'image'.", nullable=True),
            }
        ),
        produces_files=True,
        read_only=False,
    )


def read_documents_spec() -> ToolSpec:
    """``read_documents(documentList)``; the argument accepts any JSON (not strict)."""
    return ToolSpec(
        "read_documents",
        "Read the content of documents of the active workflow. Pass `documentList` with the "
        'references you were given, e.g. ["docItem:<id>", "docItem:<id>"]; a single '
        'string, an object like {"documents": [{"id": "<id>"}]}, `docList:<label>` for '
        "every file of one result and `file:<file id>` work too. Returns the text of each "
        "document (PDF page by page), images as images, and one line for each reference that "
        "could not be read, with the reason and the valid references. Call list_documents "
        "to see which references exist.",
        {
            "type": "object",
            "properties": {
                "documentList": {
                    "description": (
                        "The document references: a list of 'docItem:<id>' strings (preferred), "
                        "one string, or an object with a 'documents' list."
                    ),
                }
            },
            "required": ["documentList"],
            "additionalProperties": False,
        },
        produces_files=False,
        read_only=True,
        strict=False,
    )


def list_documents_spec() -> ToolSpec:
    """``list_documents()``."""
    return ToolSpec(
        "list_documents",
        "List the documents of the active workflow, newest first: for each its `docItem:<id>` "
        "reference (to copy into a documentList), file name, type, size and file id. Also "
        "says which workflow is active. Takes no arguments.",
        _obj({}),
        produces_files=False,
        read_only=True,
    )


def read_file_spec() -> ToolSpec:
    """``read_file(file_id, max_chars)``."""
    return ToolSpec(
        "read_file",
        "Read the text of one stored file by its file id (the `file id:` line of a tool "
        "result, or from list_files). Text formats come back as stored, HTML as its visible "
        "text, PDF as page text; images have no text (use read_documents for them). "
        f"`max_chars` (default {DEFAULT_MAX_CHARS}) may be null; longer text ends with a "
        "'[truncated ...]' line.",
        _obj(
            {
                "file_id": _string("The file id."),
                "max_chars": _integer(
                    f"Most characters to return; null means {DEFAULT_MAX_CHARS}."
                ),
            }
        ),
        produces_files=False,
        read_only=True,
    )


def search_spec() -> ToolSpec:
    """``search_in_file_content(query, file_ids, limit)``."""
    return ToolSpec(
        "search_in_file_content",
        "Find the lines containing `query` (case-insensitive) in stored text, HTML and PDF "
        "files. `file_ids` (a list of file ids; null searches every file you may read) and "
        f"`limit` (default {DEFAULT_SEARCH_LIMIT} matches) may be null. Each match line gives "
        "the file name, file id, line number and the line.",
        _obj(
            {
                "query": _string("The text to look for."),
                "file_ids": {
                    "type": ["array", "null"],
                    "items": {"type": "string"},
                    "description": "File ids to search; null searches all readable files.",
                },
                "limit": _integer(f"Most matches; null means {DEFAULT_SEARCH_LIMIT}."),
            }
        ),
        produces_files=False,
        read_only=True,
    )


def get_file_info_spec() -> ToolSpec:
    """``get_file_info(file_id)``."""
    return ToolSpec(
        "get_file_info",
        "Show the metadata of one stored file by its file id: name, MIME type, size in "
        "bytes, SHA-256, creator, creation time, folder and tags.",
        _obj({"file_id": _string("The file id.")}),
        produces_files=False,
        read_only=True,
    )


def list_files_spec() -> ToolSpec:
    """``list_files(limit)``."""
    return ToolSpec(
        "list_files",
        "List the stored files you may read (not only this workflow's), newest first, one "
        "line each with file id, name, MIME type and size. `limit` (default 50) may be null.",
        _obj({"limit": _integer("Most files to list; null means 50.")}),
        produces_files=False,
        read_only=True,
    )
