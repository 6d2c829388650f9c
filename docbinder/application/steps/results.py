"""The unified tool-result text (SPEC C5) and what a tool is told when a file stayed unattached."""

from __future__ import annotations

import enum

import attrs

from docbinder.domain.errors import (
    AccessDenied,
    DocbinderError,
    FileItemNotFound,
    InvalidInput,
    NoActiveWorkflow,
    WorkflowNotFound,
)
from docbinder.domain.model import FileItem


class NotAttachedCause(enum.StrEnum):
    """Why a stored file was not attached to the workflow (SPEC C3)."""

    NO_WORKFLOW = "no_workflow"
    WORKFLOW_NOT_FOUND = "workflow_not_found"
    PERMISSION_DENIED = "permission_denied"
    INVALID_INPUT = "invalid_input"
    STORAGE_FAULT = "storage_fault"


@attrs.frozen
class NotAttached:
    """A file that was stored but is in no workflow: the ``cause`` and the error's ``message``.

    Built by :meth:`from_error` from what the attach raised; ``message`` is the
    error's text (for logs and the host; the model is told only the cause).
    """

    cause: NotAttachedCause
    message: str

    @classmethod
    def from_error(cls, exc: BaseException) -> NotAttached:
        """The cause of ``exc``: no workflow bound, the workflow no longer readable,
        permission denied (also a file that is not readable), invalid input, or a
        storage fault (anything else)."""
        if isinstance(exc, NoActiveWorkflow):
            cause = NotAttachedCause.NO_WORKFLOW
        elif isinstance(exc, WorkflowNotFound):
            cause = NotAttachedCause.WORKFLOW_NOT_FOUND
        elif isinstance(exc, AccessDenied | FileItemNotFound):
            cause = NotAttachedCause.PERMISSION_DENIED
        elif isinstance(exc, InvalidInput):
            cause = NotAttachedCause.INVALID_INPUT
        else:
            cause = NotAttachedCause.STORAGE_FAULT
        return cls(cause, str(exc) if isinstance(exc, DocbinderError) else repr(exc))


_NOT_ATTACHED_WHY = {
    NotAttachedCause.NO_WORKFLOW: "no workflow is bound",
    NotAttachedCause.WORKFLOW_NOT_FOUND: "the workflow is no longer readable",
    NotAttachedCause.PERMISSION_DENIED: "this caller may not add files to the workflow",
    NotAttachedCause.INVALID_INPUT: "the attach was refused as invalid",
    NotAttachedCause.STORAGE_FAULT: "storing the attach failed",
}


def not_attached_line(refusal: NotAttached) -> str:
    """The one line that tells the model a stored file is not in the workflow, and why.

    ``  not in the workflow: stored, but <cause>; it has no reference to cite, use its
    file id``. The cause is a fixed phrase per
    :class:`NotAttachedCause`, never the error's own text.
    """
    return (
        f"  not in the workflow: stored, but {_NOT_ATTACHED_WHY[refusal.cause]}; "
        "it has no reference to cite, use its file id"
    )


def format_tool_file_result(
    verb: str, item: FileItem, document_id: str | None, not_attached: NotAttached | None = None
) -> str:
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
    ``file id`` line stays. When a workflow was bound but the attach was
    refused or failed (``not_attached`` with any other cause than
    ``no_workflow``), the :func:`not_attached_line` takes the place of the
    ``documentList ref`` line, so the model never cites a reference that does
    not exist.
    """
    lines = [f"{verb} '{printable(item.file_name)}' ({item.size} bytes)"]
    if document_id is not None:
        lines.append(f"  documentList ref: docItem:{document_id}")
    elif not_attached is not None and not_attached.cause is not NotAttachedCause.NO_WORKFLOW:
        lines.append(not_attached_line(not_attached))
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
