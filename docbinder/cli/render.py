"""How a resolution and the content a consuming tool receives are shown to people.

Used by ``docbinder resolve`` and ``docbinder demo``; ``--json`` prints the
same values through :func:`~docbinder.cli.output.emit_json` instead.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from docbinder.cli.output import clean, out, styled
from docbinder.domain.model import ContentKind, ContentPart

if TYPE_CHECKING:
    from docbinder.application import (
        ContentResult,
        DocumentContent,
        Resolution,
        UnresolvedReference,
    )

TEXT_SHOWN = 160
"""Characters of a text part shown on its line (``--json`` gives the whole text)."""


def print_resolution(resolution: Resolution) -> None:
    """Human-readable resolution: documents, unresolved references, suggestions."""
    for doc in resolution.documents:
        out.print(
            f"{doc.document.reference}  {doc.file.file_name}  "
            f"({doc.file.size} bytes, {doc.file.mime_type})  file id {doc.file.id}"
        )
    for miss in resolution.unresolved:
        _print_unresolved(miss)
    if resolution.suggestions:
        from docbinder.application.use_cases.resolve_document_list import DEFAULT_SUGGESTIONS

        out.print(
            f"recent documents in this workflow (at most {DEFAULT_SUGGESTIONS}, newest first):"
        )
        for sug in resolution.suggestions:
            out.print(f"  {sug.reference}  {sug.file_name}")


def _print_unresolved(miss: UnresolvedReference) -> None:
    line = styled("unresolved", "yellow")
    shown = miss.reference
    if miss.reason.value == "rejected_input":
        from docbinder.serialization import reference_value

        shown = json.dumps(reference_value(miss.reference), ensure_ascii=False)
    line.append(" " + clean(f"{shown}: {miss.reason.value} - {miss.message}"))
    out.print(line)


def print_content(result: ContentResult) -> None:
    """Human-readable content parts per document."""
    if not result.documents and result.resolution.references:
        out.print(styled("no content parts", "yellow"))
    for doc in result.documents:
        _print_document(doc)


def _print_document(doc: DocumentContent) -> None:
    line = styled(doc.file_name, "bold")
    line.append(clean(f" ({doc.mime_type}) {doc.reference}"))
    out.print(line)
    for part in doc.parts:
        out.print(_part_line(part))
        for note in _part_notes(part):
            out.print(f"    {note}")


def _part_line(part: ContentPart) -> str:
    """One line per part: the start of its text, or its kind, type and size in bytes."""
    where = f" {part.position}" if part.position else ""
    cut = " (truncated)" if part.truncated else ""
    if part.kind is ContentKind.TEXT:
        text = (part.text or "").strip().replace("\n", " / ")
        if not text:
            # An empty file or a page of whitespace: say so rather than print nothing.
            return f"  text{where}{cut}: [no text: {len(part.text or '')} characters]"
        text = text if len(text) <= TEXT_SHOWN else text[: TEXT_SHOWN - 3] + "..."
        return f"  text{where}{cut}: {text}"
    size = len(part.data) if part.data is not None else part.size
    return f"  {part.kind.value} part{where}{cut}: {part.mime_type}, {size} bytes"


def _part_notes(part: ContentPart) -> list[str]:
    """Why a part was cut, a guessed encoding, a binary part's note."""
    notes = []
    if part.truncated_reason:
        notes.append(f"truncated: {part.truncated_reason}")
    if part.encoding_guessed and part.encoding:
        notes.append(f"encoding {part.encoding} was guessed from the bytes")
    if part.note and part.kind is not ContentKind.TEXT:
        notes.append(f"note: {part.note}")
    return notes
