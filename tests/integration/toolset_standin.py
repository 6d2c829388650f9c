"""A minimal stand-in for ``docbinder.toolset.DocbinderToolset`` (its documented interface).

Used only until the shared tool set is available on this line of work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import attrs

from docbinder.domain.errors import DocbinderError
from docbinder.domain.model import ContentPart
from docbinder.tools import write_file


@attrs.frozen
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]
    produces_files: bool
    read_only: bool


@attrs.frozen
class ToolOutcome:
    text: str
    parts: tuple[ContentPart, ...] = ()
    file_ids: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    is_error: bool = False


_SPECS = (
    ToolSpec(
        "write_file",
        "Write a text file; returns a docItem reference.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "file name"},
                "content": {"type": "string", "description": "text"},
                "mode": {"type": "string", "enum": ["create", "append"], "default": "create"},
            },
            "required": ["name", "content"],
        },
        True,
        False,
    ),
    ToolSpec(
        "read_documents",
        "Read documents by their docItem references.",
        {
            "type": "object",
            "properties": {"documentList": {"description": "references, any shape"}},
            "required": ["documentList"],
        },
        False,
        True,
    ),
)


class DocbinderToolset:
    def __init__(self, run: Any, *, data_sources: Any = None, image_generator: Any = None):
        self.run = run
        self.specs = _SPECS

    def spec(self, name: str) -> ToolSpec:
        return next(s for s in self.specs if s.name == name)

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        try:
            if name == "write_file":
                result = write_file(
                    self.run,
                    arguments["name"],
                    arguments["content"],
                    mode=arguments.get("mode", "create"),
                )
                return ToolOutcome(
                    result.text,
                    file_ids=result.file_ids,
                    document_ids=tuple(f.document_id for f in result.files if f.document_id),
                )
            content = self.run.get_content(arguments["documentList"])
            lines = []
            for part in content.parts:
                lines.append(f"--- {part.file_name} ({part.mime_type})")
                if part.text is not None:
                    lines.append(part.text)
            for miss in content.unresolved:
                lines.append(f"unresolved {miss.reference}: {miss.reason}")
            return ToolOutcome(
                "\n".join(lines),
                parts=content.parts,
                file_ids=tuple(d.document.file_id for d in content.resolution.documents),
                document_ids=tuple(d.document.id for d in content.resolution.documents),
            )
        except DocbinderError as exc:
            return ToolOutcome(str(exc), is_error=True)

    async def acall(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        return await anyio.to_thread.run_sync(self.call, name, arguments)
