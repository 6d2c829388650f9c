"""The unified tool-result text (SPEC C5)."""

from __future__ import annotations

from docbinder.domain.model import FileItem


def format_tool_file_result(verb: str, item: FileItem, document_id: str | None) -> str:
    """The text every file-producing tool returns to the model.

    Format (SPEC C5, after the original platform's convention)::

        Downloaded 'platform-overview.html' (87654 bytes)
          documentList ref: docItem:<chatDocumentId>
          file id: <fileId>

    ``verb`` says what happened (``Downloaded``, ``Wrote``, ``Rendered``,
    ``Generated``, ``Created chart``, ``Stored``). Without an active workflow
    (``document_id is None``) the ``documentList ref`` line is left out and the
    ``file id`` line stays.
    """
    lines = [f"{verb} '{item.file_name}' ({item.size} bytes)"]
    if document_id is not None:
        lines.append(f"  documentList ref: docItem:{document_id}")
    lines.append(f"  file id: {item.id}")
    return "\n".join(lines)
