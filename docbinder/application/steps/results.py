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
    ``Generated``, ``Created chart``, ``Stored``). Characters of the name that
    are not printable (tabs, line or paragraph separators, bidi controls) are
    shown as ``\\u`` escapes (``\\u2028``), so a file name can never add a line of its own
    to the text the model reads. Without an active workflow
    (``document_id is None``) the ``documentList ref`` line is left out and the
    ``file id`` line stays.
    """
    lines = [f"{verb} '{printable(item.file_name)}' ({item.size} bytes)"]
    if document_id is not None:
        lines.append(f"  documentList ref: docItem:{document_id}")
    lines.append(f"  file id: {item.id}")
    return "\n".join(lines)


def printable(text: str) -> str:
    """``text`` with every non-printable character (``str.isprintable``) but space escaped.

    Tab becomes ``\\t``, other characters ``\\u`` and four hex digits
    (``\\U`` and eight above the Basic Multilingual Plane).
    """
    if str.isprintable(text):  # not a subclass's own answer
        return text  # the usual name: nothing to escape
    out: list[str] = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)
