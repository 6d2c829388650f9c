"""Names, descriptions and JSON schemas of the docbinder tools, defined once for every host.

Each :class:`ToolSpec` is what a host framework (MCP, LangChain, the OpenAI
Agents SDK, pydantic-ai, ADK) shows a language model: a name, a description
written for the model, and the JSON Schema (draft 2020-12 subset) of the
arguments.

Schemas follow OpenAI's structured-outputs "strict mode" rules
(https://platform.openai.com/docs/guides/function-calling, "strict mode") where
they can: an object schema lists every property in ``required`` and sets
``"additionalProperties": false``; an optional argument is nullable
(``"type": ["integer", "null"]``) and ``null`` means "use the default". The
tool set also accepts a missing optional argument, so hosts that leave optional
arguments out work as well.

Three arguments accept any JSON value a model may send, which strict mode cannot
express (it closes every object and needs a type for every array item):
``read_documents.documentList`` (every shape the reference parser accepts),
``write_file.content`` (an object for a ``.json`` file, rows for ``.csv``) and
``create_chart.spec`` (a Chart.js, Vega-Lite or Plotly object). Those specs have
:attr:`ToolSpec.strict` ``False``, and their
:attr:`ToolSpec.strict_parameters` encode the same arguments strictly: a value
strict mode cannot describe is passed as JSON text, which the tool set parses
(ADR 0023). :func:`strict_schema` gives the strict schema of any spec.

Hosts that check the model's arguments against the schema before they send
them (MCP clients, the OpenAI Agents SDK's MCP classes) get
:func:`handle_schema`: the same properties, ``required`` listing only the
arguments a call must have, plus the optional ``workflow`` handle (ADR 0054).

Every spec declares :attr:`ToolSpec.output_schema`, the JSON Schema of the
structured result (:attr:`~docbinder.toolset.ToolOutcome.structured`) of a
call that succeeded; the shapes are listed in :data:`OUTPUT_SCHEMAS` and
documented in ADR 0055.

Argument descriptions of the tolerant arguments are
:data:`docbinder.tools.arguments.ACCEPTED_SHAPES` (shapes with a tiny example
each); tool descriptions list the same shapes briefly
(:attr:`~docbinder.tools.arguments.ArgumentShapes.brief`).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
from docbinder.tools.arguments import ACCEPTED_SHAPES, ARGUMENT_SHAPES, show_example
from docbinder.tools.charts import MAX_POINTS, MAX_SERIES
from docbinder.tools.consuming import DEFAULT_MAX_CHARS, DEFAULT_SEARCH_LIMIT
from docbinder.tools.producing import DOCUMENT_FORMATS


@attrs.frozen
class ToolSpec:
    """One tool as a host framework presents it to a model.

    ``name`` is the tool name (``write_file``, ...); ``description`` is written
    for a language model; ``parameters`` is the JSON Schema of the arguments
    (an object schema, see the module documentation); ``produces_files`` is
    true for tools that store files and answer with ``docItem:`` references;
    ``read_only`` is true for tools that change nothing; ``strict`` says
    whether ``parameters`` meets OpenAI strict mode. ``strict_parameters``
    is, for a spec that is not strict, the same arguments encoded for strict
    mode (a value strict mode cannot describe as JSON text), else ``None``;
    :func:`strict_schema` picks the right one. ``output_schema`` is the JSON
    Schema (draft 2020-12) of the structured result of a successful call
    (:data:`OUTPUT_SCHEMAS`), or ``None`` for a spec that declares none.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    produces_files: bool
    read_only: bool
    strict: bool = True
    strict_parameters: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None


class FileScope(enum.StrEnum):
    """Which files the file-level tools (``read_file``, ``get_file_info``,
    ``search_in_file_content``, ``list_files``) answer for, chosen by the host.

    ``PRINCIPAL``: every file the run's principal may read, in the workflow or
    not (the in-process hosts, which bind their run themselves). ``WORKFLOW``:
    only the files a document of the run's workflow points at, and none
    without a workflow (the MCP server, where every conversation of a client
    acts as one principal and the workflow is what tells them apart; ADR 0054,
    addendum). The tool descriptions say which.
    """

    PRINCIPAL = "principal"
    WORKFLOW = "workflow"


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


def _shaped(key: str, schema: Mapping[str, Any], *, also: str = "") -> dict[str, Any]:
    """``schema`` described by the accepted shapes of argument ``key`` (``"<tool>.<arg>"``)."""
    description = ACCEPTED_SHAPES[key] + (f" {also}" if also else "")
    return {**schema, "description": description}


def _shapes_line(tool: str, *arguments: str, example: int = 0) -> str:
    """The sentences of a tool description that list the accepted shapes of ``arguments``.

    One sentence per argument (``Accepted `spec`: a; b; c.``), the shapes of
    :data:`~docbinder.tools.arguments.ARGUMENT_SHAPES`, then one example: that
    of shape number ``example`` of the first argument.
    """
    listed = " ".join(f"Accepted `{a}`: {ARGUMENT_SHAPES[f'{tool}.{a}'].brief}." for a in arguments)
    first = ARGUMENT_SHAPES[f"{tool}.{arguments[0]}"].examples[example]
    return (
        f"{listed} For example `{arguments[0]}`: {show_example(first)}; each argument's "
        "description has an example of every shape."
    )


_SCALAR: Final = {"type": ["string", "number", "boolean", "null"]}
_OPEN_OBJECT: Final = {"type": "object", "additionalProperties": True}
_ROW_LIST: Final = {"type": "array", "items": _SCALAR}
_JSON_ARRAY: Final = {"type": "array", "items": {"anyOf": [_OPEN_OBJECT, _ROW_LIST, _SCALAR]}}
"""An array of objects, of lists of scalars (rows) or of scalars: every array has typed items,
as OpenAI requires even outside strict mode."""

_STRICT_ROW_LIST: Final = {
    "type": "array",
    "items": {"anyOf": [{"type": t} for t in ("string", "number", "boolean", "null")]},
}
"""A row for strict mode: one ``anyOf`` branch per scalar type (strict mode documents ``anyOf``
and a type list of one type and ``null``, nothing wider)."""

_JSON_TEXT_NOTE: Final = (
    "In this schema a value that is an object is written as JSON text in the string."
)


OPTIONAL: Final[Mapping[str, frozenset[str]]] = {
    "write_file": frozenset({"encoding"}),
    "download_from_data_source": frozenset(),
    "render_document": frozenset({"formats", "title"}),
    "create_chart": frozenset({"name"}),
    "generate_image": frozenset({"n", "size", "name"}),
    "read_documents": frozenset(),
    "list_documents": frozenset(),
    "read_file": frozenset({"max_chars"}),
    "search_in_file_content": frozenset({"file_ids", "limit"}),
    "get_file_info": frozenset(),
    "list_files": frozenset({"limit"}),
}
"""Per tool, the arguments that may be ``null`` or left out (their default applies)."""


# -- structured results -------------------------------------------------------------------------


def _closed(properties: Mapping[str, Any], description: str | None = None) -> dict[str, Any]:
    """An object schema with every property required and no other property."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def _array(items: Mapping[str, Any], description: str) -> dict[str, Any]:
    return {"type": "array", "items": dict(items), "description": description}


_OUT_WORKFLOW: Final = {
    "type": ["string", "null"],
    "description": (
        "The id of the workflow the call worked in: the handle to pass as `workflow` in later "
        "calls; null when the call had no workflow."
    ),
}
_OUT_REF: Final = {
    "type": "string",
    "description": "The file's reference in the workflow, `docItem:<id>`, for a documentList.",
}
_OUT_REF_OR_NULL: Final = {
    **_OUT_REF,
    "type": ["string", "null"],
    "description": "The file's `docItem:<id>` reference in the workflow, or null when it has none.",
}
_OUT_FILE_ID: Final = {"type": "string", "description": "The FileItem id (`file id:` line)."}
_OUT_NAME: Final = {"type": "string", "description": "The file name."}
_OUT_MIME: Final = {"type": "string", "description": "The MIME type."}
_OUT_SIZE: Final = {"type": "integer", "minimum": 0, "description": "The size in bytes."}
_OUT_SHA256: Final = {
    "type": "string",
    "pattern": "^[0-9a-f]{64}$",
    "description": "SHA-256 of the bytes, lowercase hex.",
}
_NULLABLE_TEXT: Final = {"type": ["string", "null"]}
_OUT_PROVENANCE: Final = _closed(
    {
        "tool": {
            **_NULLABLE_TEXT,
            "description": "The tool that produced the file; null when the producer declared none.",
        },
        "toolCallId": {**_NULLABLE_TEXT, "description": "The host's id of that tool call."},
        "argsSha256": {
            **_NULLABLE_TEXT,
            "description": "SHA-256 of the call's arguments (canonical JSON); never the arguments.",
        },
        "runId": {**_NULLABLE_TEXT, "description": "The agent run that produced the file."},
        "workflowId": {**_NULLABLE_TEXT, "description": "The workflow that run was bound to."},
        "messageId": {
            **_NULLABLE_TEXT,
            "description": "The ChatMessage that attached the file when it was produced.",
        },
        "model": {**_NULLABLE_TEXT, "description": "The model's name, when the host gave it."},
        "parents": {
            "type": "array",
            "items": {"type": "string"},
            "description": "File ids the run had read before producing this file.",
        },
        "sandboxId": {
            **_NULLABLE_TEXT,
            "description": "The sandbox or code-execution container the file was harvested from.",
        },
        "sourcePath": {
            **_NULLABLE_TEXT,
            "description": "The file's path inside that sandbox, as it wrote it.",
        },
    },
    "Where the file came from (B9).",
)

PRODUCED_FILE_SCHEMA: Final = _closed(
    {
        "documentRef": _OUT_REF_OR_NULL,
        "fileId": _OUT_FILE_ID,
        "name": _OUT_NAME,
        "mimeType": _OUT_MIME,
        "size": _OUT_SIZE,
        "sha256": _OUT_SHA256,
        "version": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": (
                "The version number when the tool saved the file as a version of its name; "
                "null otherwise (no tool of this set saves versions)."
            ),
        },
    },
    "One file the call stored.",
)
"""One stored file in the result of a producing tool."""

_OUT_UNRESOLVED: Final = _array(
    _closed(
        {
            "reference": {"type": "string", "description": "The reference as given."},
            "reason": {
                "type": "string",
                "enum": [reason.value for reason in UnresolvedReason],
                "description": "Why it did not resolve.",
            },
            "message": {"type": "string", "description": "The reason in one sentence."},
        }
    ),
    "One entry per reference that could not be read.",
)
_OUT_VALID: Final = _array(
    _closed({"documentRef": _OUT_REF, "name": _OUT_NAME}),
    "The workflow's most recent readable documents (filled only when something failed).",
)
_OUT_NOTICE: Final = {
    "type": ["string", "null"],
    "description": "What to do next when the answer is empty for a reason (e.g. no workflow).",
}
_OUT_LISTED_DOCUMENT: Final = {
    "documentRef": _OUT_REF,
    "fileId": _OUT_FILE_ID,
    "name": _OUT_NAME,
    "mimeType": _OUT_MIME,
    "size": _OUT_SIZE,
}

_PRODUCED: Final = _closed(
    {"workflow": _OUT_WORKFLOW, "files": _array(PRODUCED_FILE_SCHEMA, "The new files, in order.")}
)

OUTPUT_SCHEMAS: Final[Mapping[str, Mapping[str, Any]]] = {
    "write_file": _PRODUCED,
    "download_from_data_source": _PRODUCED,
    "render_document": _PRODUCED,
    "create_chart": _PRODUCED,
    "generate_image": _PRODUCED,
    "read_documents": _closed(
        {
            "workflow": _OUT_WORKFLOW,
            "documents": _array(
                _closed(
                    {
                        **_OUT_LISTED_DOCUMENT,
                        "text": {
                            "type": "string",
                            "description": (
                                "The document's text as the text answer shows it (PDF pages "
                                "after `[page N]` lines, one placeholder line per image or "
                                "binary part), within the answer's character budget."
                            ),
                        },
                    }
                ),
                "The documents read, in reference order.",
            ),
            "unresolved": _OUT_UNRESOLVED,
            "validReferences": _OUT_VALID,
            "truncated": {
                "type": "boolean",
                "description": "Whether text was cut at the answer's character budget.",
            },
            "notice": _OUT_NOTICE,
        }
    ),
    "list_documents": _closed(
        {
            "workflow": _OUT_WORKFLOW,
            "documents": _array(_closed(_OUT_LISTED_DOCUMENT), "Newest first."),
            "truncated": {
                "type": "boolean",
                "description": "Whether only the newest documents are listed.",
            },
            "notice": _OUT_NOTICE,
        }
    ),
    "read_file": _closed(
        {
            "workflow": _OUT_WORKFLOW,
            "text": {"type": "string", "description": "The answer text, within max_chars."},
            "files": _array(
                _closed({"documentRef": _OUT_REF_OR_NULL, "fileId": _OUT_FILE_ID}),
                "The files the answer covers, in order.",
            ),
            "unresolved": _OUT_UNRESOLVED,
            "validReferences": _OUT_VALID,
        }
    ),
    "search_in_file_content": _closed(
        {
            "workflow": _OUT_WORKFLOW,
            "matches": _array(
                _closed(
                    {
                        "fileId": _OUT_FILE_ID,
                        "name": _OUT_NAME,
                        "position": {
                            "type": ["string", "null"],
                            "description": "The page of a PDF ('page 2'), else null.",
                        },
                        "lineNumber": {"type": "integer", "minimum": 1},
                        "line": {"type": "string", "description": "The matching line."},
                    }
                ),
                "The matching lines.",
            ),
            "unsearched": _array(
                _closed(
                    {
                        "fileId": _OUT_FILE_ID,
                        "name": _OUT_NAME,
                        "reason": {
                            "type": "string",
                            "description": (
                                "Why the file was not searched, or only in part (the call's "
                                "budget was spent, its text was cut, it was not converted)."
                            ),
                        },
                    }
                ),
                "The files this call did not search wholly; ask again for them alone.",
            ),
            "notice": _OUT_NOTICE,
        }
    ),
    "get_file_info": _closed(
        {
            "workflow": _OUT_WORKFLOW,
            "files": _array(
                _closed(
                    {
                        "documentRef": _OUT_REF_OR_NULL,
                        "fileId": _OUT_FILE_ID,
                        "name": _OUT_NAME,
                        "mimeType": _OUT_MIME,
                        "size": _OUT_SIZE,
                        "sha256": _OUT_SHA256,
                        "createdBy": {"type": "string", "description": "The creating user's id."},
                        "createdAt": {
                            "type": "string",
                            "format": "date-time",
                            "description": "Creation time, ISO 8601 in UTC.",
                        },
                        "folder": {"type": ["string", "null"]},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "provenance": _OUT_PROVENANCE,
                    }
                ),
                "The files described, in order.",
            ),
            "more": {
                "type": "integer",
                "minimum": 0,
                "description": "How many more files the reference names than are described.",
            },
            "unresolved": _OUT_UNRESOLVED,
            "validReferences": _OUT_VALID,
        }
    ),
    "list_files": _closed(
        {
            "workflow": _OUT_WORKFLOW,
            "files": _array(
                _closed(
                    {
                        "fileId": _OUT_FILE_ID,
                        "name": _OUT_NAME,
                        "mimeType": _OUT_MIME,
                        "size": _OUT_SIZE,
                    }
                ),
                "Newest first.",
            ),
            "notice": _OUT_NOTICE,
        }
    ),
}
"""Per tool, the JSON Schema (draft 2020-12) of the structured result of a successful call.

Every result carries ``workflow``. A failed call is an error result whose
structured part is ``{"workflow": ..., "error": "<the one-line message>"}``;
MCP clients validate only results that did not fail (ADR 0055).
"""

ERROR_SCHEMA: Final = _closed(
    {"workflow": _OUT_WORKFLOW, "error": {"type": "string", "description": "The one-line error."}}
)
"""The structured part of a failed call."""


# -- the workflow handle ----------------------------------------------------------------------

WORKFLOW_ARGUMENT: Final = "workflow"
"""The name of the optional argument that carries the workflow handle (ADR 0054)."""

HANDLE_SENTENCE: Final = (
    "Every answer ends with a `workflow: <id>` line: pass that id as `workflow` in each later "
    "docbinder call of this conversation so they all work on the same files."
)
"""The sentence of every tool description that tells the model how to carry the handle."""

_WORKFLOW_PROPERTY: Final = {
    "type": ["string", "null"],
    "description": (
        "The workflow handle: the id of the `workflow:` line of an earlier docbinder answer in "
        "this conversation. Leave it out on the first call; a producing tool then starts a new "
        "workflow."
    ),
}


def handle_schema(spec: ToolSpec) -> dict[str, Any]:
    """The arguments of ``spec`` for a host that carries the workflow handle in each call.

    The properties of :attr:`ToolSpec.parameters`, with ``required`` listing
    only the arguments a call must have (those not in :data:`OPTIONAL`: a
    host that checks arguments against the schema before sending them, as
    the OpenAI Agents SDK does, then lets a model leave the others out), plus
    the optional, nullable ``workflow`` argument. A new dict; ``spec`` is not
    changed.
    """
    schema = copy.deepcopy(dict(spec.parameters))
    properties = schema.setdefault("properties", {})
    optional = OPTIONAL.get(spec.name, frozenset())
    schema["required"] = [k for k in schema.get("required", ()) if k not in optional]
    properties[WORKFLOW_ARGUMENT] = dict(_WORKFLOW_PROPERTY)
    return schema


def handle_spec(spec: ToolSpec) -> ToolSpec:
    """``spec`` as a host that carries the workflow handle shows it (MCP, ADR 0054).

    The description gains :data:`HANDLE_SENTENCE`, the parameters are
    :func:`handle_schema`; the rest is unchanged.
    """
    return attrs.evolve(
        spec,
        description=f"{spec.description} {HANDLE_SENTENCE}",
        parameters=handle_schema(spec),
    )


_FILE_ID_ARGUMENT: Final = {
    FileScope.PRINCIPAL: (
        "A file id, or one reference of the active workflow: 'docItem:<id>', "
        "'docList:<label>' (every file of that result) or 'file:<file id>'."
    ),
    FileScope.WORKFLOW: (
        "The file id of a file of the active workflow, or one reference of it: "
        "'docItem:<id>', 'docList:<label>' (every file of that result) or 'file:<file id>'."
    ),
}
_WHICH_FILE: Final = {
    FileScope.PRINCIPAL: "its file id (the `file id:` line of a tool result, or from list_files)",
    FileScope.WORKFLOW: (
        "the file id of a file of the active workflow (the `file id:` line of a tool result, "
        "or from list_files)"
    ),
}


def write_file_spec() -> ToolSpec:
    """``write_file(name, content, encoding)``; ``content`` takes any JSON value (not strict)."""
    name = _shaped("write_file.name", {"type": "string"})
    encoding = _shaped(
        "write_file.encoding", {"type": ["string", "null"], "enum": ["text", "base64", None]}
    )
    return ToolSpec(
        "write_file",
        "Create a new file and attach it to the active workflow: Markdown, CSV, JSON, code, "
        "or a binary file such as a PNG. Pass `name`, a file name with extension such as "
        "'summary.md', and `content`; the content's shape follows the name's type. "
        + _shapes_line("write_file", "content", "name", example=1)
        + " Leave `encoding` null. "
        + _REF_HINT,
        _obj(
            {
                "name": name,
                "content": _shaped(
                    "write_file.content", {"anyOf": [{"type": "string"}, _OPEN_OBJECT, _JSON_ARRAY]}
                ),
                "encoding": encoding,
            }
        ),
        produces_files=True,
        read_only=False,
        output_schema=OUTPUT_SCHEMAS["write_file"],
        strict=False,
        strict_parameters=_obj(
            {
                "name": name,
                "content": _shaped(
                    "write_file.content",
                    {"anyOf": [{"type": "string"}, {"type": "array", "items": _STRICT_ROW_LIST}]},
                    also=_JSON_TEXT_NOTE,
                ),
                "encoding": encoding,
            }
        ),
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
        output_schema=OUTPUT_SCHEMAS["download_from_data_source"],
    )


def render_document_spec() -> ToolSpec:
    """``render_document(markdown, name, formats, title)``."""
    return ToolSpec(
        "render_document",
        "Render Markdown (CommonMark with tables) into a finished document: an HTML page "
        "and/or a PDF. Pass `markdown`, `name` (the base file name without extension, e.g. "
        "'quarterly-report'), `formats` (null means html) and `title` (null: the first "
        "heading). Each format becomes its own file. "
        + _shapes_line("render_document", "formats", "name")
        + " "
        + _REF_HINT,
        _obj(
            {
                "markdown": _shaped("render_document.markdown", {"type": "string"}),
                "name": _shaped("render_document.name", {"type": "string"}),
                "formats": _shaped(
                    "render_document.formats",
                    {
                        "anyOf": [
                            {
                                "type": "array",
                                "items": {"type": "string", "enum": list(DOCUMENT_FORMATS)},
                            },
                            {"type": "string"},
                            {"type": "null"},
                        ]
                    },
                ),
                "title": _shaped("render_document.title", {"type": ["string", "null"]}),
            }
        ),
        produces_files=True,
        read_only=False,
        output_schema=OUTPUT_SCHEMAS["render_document"],
    )


def create_chart_spec() -> ToolSpec:
    """``create_chart(spec, name)``; ``spec`` takes any JSON value (not strict)."""
    name = _shaped("create_chart.name", {"type": ["string", "null"]})
    return ToolSpec(
        "create_chart",
        "Draw a bar, line or pie chart as a PNG image and attach it to the active workflow. "
        "Pass `spec`, the chart in the shape you know best, and `name` (null: the chart's "
        "title). " + _shapes_line("create_chart", "spec") + f" At most {MAX_SERIES} series of "
        f"{MAX_POINTS} points; a pie chart has one series of non-negative values. " + _REF_HINT,
        _obj(
            {
                "spec": _shaped(
                    "create_chart.spec",
                    {
                        "anyOf": [
                            _OPEN_OBJECT,
                            {"type": "array", "items": {"anyOf": [_OPEN_OBJECT, _ROW_LIST]}},
                            {"type": "string"},
                        ]
                    },
                ),
                "name": name,
            }
        ),
        produces_files=True,
        read_only=False,
        output_schema=OUTPUT_SCHEMAS["create_chart"],
        strict=False,
        strict_parameters=_obj(
            {
                "spec": _shaped(
                    "create_chart.spec",
                    {"type": "string"},
                    also="In this schema `spec` is a string: write any of these shapes as JSON text.",
                ),
                "name": name,
            }
        ),
    )


def generate_image_spec() -> ToolSpec:
    """``generate_image(prompt, n, size, name)``."""
    return ToolSpec(
        "generate_image",
        "Generate images from a text prompt with the configured image service and attach "
        "each to the active workflow. Pass `prompt`; `n`, `size` and `name` may be null. "
        + _shapes_line("generate_image", "n", "size")
        + " "
        + _REF_HINT,
        _obj(
            {
                "prompt": _shaped("generate_image.prompt", {"type": "string"}),
                "n": _shaped("generate_image.n", {"type": ["integer", "null"]}),
                "size": _shaped("generate_image.size", {"type": ["string", "null"]}),
                "name": _shaped("generate_image.name", {"type": ["string", "null"]}),
            }
        ),
        produces_files=True,
        read_only=False,
        output_schema=OUTPUT_SCHEMAS["generate_image"],
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
        output_schema=OUTPUT_SCHEMAS["read_documents"],
        strict=False,
        strict_parameters=_obj(
            {
                "documentList": {
                    "description": (
                        "The document references: a list of 'docItem:<id>' strings, or one "
                        "string (any other shape as JSON text)."
                    ),
                    "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                }
            }
        ),
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
        output_schema=OUTPUT_SCHEMAS["list_documents"],
    )


def read_file_spec(scope: FileScope = FileScope.PRINCIPAL) -> ToolSpec:
    """``read_file(file_id, max_chars)``; ``file_id`` also takes a document reference.

    ``scope`` says which file ids it reads (:class:`FileScope`).
    """
    return ToolSpec(
        "read_file",
        f"Read the text of a stored file. `file_id` is {_WHICH_FILE[scope]} or a reference of "
        "the active workflow: "
        "`docItem:<id>`, `docList:<label>` or `file:<file id>`. Text formats come back as "
        "stored, HTML as its visible text, PDF as page text, office documents as Markdown; "
        "images only as OCR text (use read_documents for the image itself). A reference that names several files (a `docList:`) "
        "returns each file's text under a `--- docItem:<id> '<name>' ... ---` header, all "
        "within `max_chars`; a file without text gets a one-line note saying how to read it, "
        "and once the limit is reached one line names the files left unread. An unknown "
        "reference gets the reason and the valid "
        f"references. `max_chars` (default {DEFAULT_MAX_CHARS}) may be null; longer text "
        "ends with a '[truncated ...]' line.",
        _obj(
            {
                "file_id": _string(_FILE_ID_ARGUMENT[scope]),
                "max_chars": _shaped("read_file.max_chars", {"type": ["integer", "null"]}),
            }
        ),
        produces_files=False,
        read_only=True,
        output_schema=OUTPUT_SCHEMAS["read_file"],
    )


_SEARCHED: Final = {
    FileScope.PRINCIPAL: "null searches every file you may read",
    FileScope.WORKFLOW: "null searches every file of the active workflow",
}


def search_spec(scope: FileScope = FileScope.PRINCIPAL) -> ToolSpec:
    """``search_in_file_content(query, file_ids, limit)`` over the files of ``scope``."""
    return ToolSpec(
        "search_in_file_content",
        "Find the lines containing `query` (case-insensitive) in stored files: text, HTML, "
        f"PDF, office documents (docx, xlsx, pptx, ODF) and images with OCR text. `file_ids` (a list of file ids; {_SEARCHED[scope]}) and "
        f"`limit` (default {DEFAULT_SEARCH_LIMIT} matches) may be null. Each match line gives "
        "the file name, file id, line number and the line.",
        _obj(
            {
                "query": _string("The text to look for."),
                "file_ids": _shaped(
                    "search_in_file_content.file_ids",
                    {
                        "anyOf": [
                            {"type": "array", "items": {"type": "string"}},
                            {"type": "string"},
                            {"type": "null"},
                        ]
                    },
                ),
                "limit": _shaped("search_in_file_content.limit", {"type": ["integer", "null"]}),
            }
        ),
        produces_files=False,
        read_only=True,
        output_schema=OUTPUT_SCHEMAS["search_in_file_content"],
    )


def get_file_info_spec(scope: FileScope = FileScope.PRINCIPAL) -> ToolSpec:
    """``get_file_info(file_id)``; ``file_id`` also takes a document reference."""
    return ToolSpec(
        "get_file_info",
        "Show the metadata of a stored file: name, MIME type, size in bytes, SHA-256, "
        f"creator, creation time, folder and tags. `file_id` is {_WHICH_FILE[scope]} or a "
        "reference of the active workflow (`docItem:<id>`, `docList:<label>`, "
        "`file:<file id>`); a "
        "reference answers with its `documentList ref:` line first, and one that names "
        "several files (a `docList:`) with one such block per file. An unknown reference "
        "gets the reason and the valid references.",
        _obj({"file_id": _string(_FILE_ID_ARGUMENT[scope])}),
        produces_files=False,
        read_only=True,
        output_schema=OUTPUT_SCHEMAS["get_file_info"],
    )


_LISTED: Final = {
    FileScope.PRINCIPAL: "List the stored files you may read (not only this workflow's)",
    FileScope.WORKFLOW: (
        "List the files of the active workflow (each file its documents point at, once)"
    ),
}


def list_files_spec(scope: FileScope = FileScope.PRINCIPAL) -> ToolSpec:
    """``list_files(limit)`` over the files of ``scope``."""
    return ToolSpec(
        "list_files",
        f"{_LISTED[scope]}, newest first, one "
        "line each with file id, name, MIME type and size. `limit` (default 50) may be null.",
        _obj({"limit": _shaped("list_files.limit", {"type": ["integer", "null"]})}),
        produces_files=False,
        read_only=True,
        output_schema=OUTPUT_SCHEMAS["list_files"],
    )


# -- strict mode ---------------------------------------------------------------------------------


def strict_schema(spec: ToolSpec) -> dict[str, Any]:
    """The arguments of ``spec`` as a JSON Schema for OpenAI strict mode.

    Starts from :attr:`ToolSpec.strict_parameters` (a spec that is not strict)
    or :attr:`ToolSpec.parameters`, then applies :func:`make_strict`. The
    result is a new dict; the spec is not changed.
    """
    return make_strict(spec.strict_parameters or spec.parameters)


def make_strict(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` (a JSON Schema object) made fit for OpenAI's strict function schemas.

    Strict mode (OpenAI "Structured Outputs", supported schemas) requires every
    property in ``required`` and no ``default``: each optional property becomes
    nullable (``null`` added to its type, or an ``anyOf`` branch), defaults
    are dropped, and a property without any type accepts a string or a list of
    strings. Objects are not closed here (hosts such as the OpenAI Agents SDK
    close them and check the result). ``parameters`` is not changed.
    """
    schema = copy.deepcopy(dict(parameters))
    _make_strict(schema)
    return schema


def _make_strict(schema: dict[str, Any]) -> None:
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = set(schema.get("required", ()))
        for key, prop in list(properties.items()):
            if not isinstance(prop, dict):
                continue
            if not _typed(prop):
                prop = properties[key] = {
                    **{k: v for k, v in prop.items() if k in ("description", "title")},
                    "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                }
            prop.pop("default", None)
            _make_strict(prop)
            if key not in required:
                properties[key] = _nullable(prop)
        schema["required"] = list(properties)
    items = schema.get("items")
    if isinstance(items, dict):
        _make_strict(items)
    for branch in schema.get("anyOf", ()) or ():
        if isinstance(branch, dict):
            _make_strict(branch)


def _typed(schema: Mapping[str, Any]) -> bool:
    return any(k in schema for k in ("type", "anyOf", "oneOf", "allOf", "enum", "const", "$ref"))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list) and "enum" not in schema:
        return {**schema, "type": [*kind, *([] if "null" in kind else ["null"])]}
    if isinstance(schema.get("anyOf"), list):
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    description = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    wrapped: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        wrapped["description"] = description
    return wrapped
