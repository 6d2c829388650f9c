"""Domain errors as HTTP answers: the one table :data:`STATUS_FOR`, and :func:`error_response`.

The body is JSON ``{"error": {"code", "message"}}``; ``code`` is the error's
stable name (``not_found``, ``access_denied``, ...), ``message`` one line without
storage internals (:func:`docbinder.toolset.toolset.public_message`). Unknown
ids and ids of another tenant raise the same error in the use cases
(:class:`~docbinder.domain.errors.FileItemNotFound`,
:class:`~docbinder.domain.errors.WorkflowNotFound`), so they answer the same here.
"""

from __future__ import annotations

import logging
from typing import Final

from starlette.responses import JSONResponse

from docbinder.domain.errors import (
    AccessDenied,
    BinderClosed,
    BlobMissing,
    ConfigurationError,
    Conflict,
    DocbinderError,
    FileExpired,
    InvalidInput,
    NoActiveWorkflow,
    NotFound,
    SizeLimitExceeded,
    StorageError,
    UnsafeOperation,
)
from docbinder.domain.links import LinkRefusal, LinkRefused
from docbinder.toolset.toolset import public_message

log = logging.getLogger(__name__)

STATUS_FOR: Final[tuple[tuple[type[DocbinderError], int, str], ...]] = (
    (LinkRefused, 410, "link_refused"),
    (FileExpired, 410, "expired"),
    (SizeLimitExceeded, 413, "too_large"),
    (NotFound, 404, "not_found"),
    (BlobMissing, 503, "blob_missing"),
    (AccessDenied, 403, "access_denied"),
    (NoActiveWorkflow, 409, "no_active_workflow"),
    (Conflict, 409, "conflict"),
    (ConfigurationError, 503, "not_configured"),
    (InvalidInput, 400, "invalid_input"),
    (BinderClosed, 503, "unavailable"),
    (StorageError, 503, "storage_fault"),
    (UnsafeOperation, 503, "storage_fault"),
    (DocbinderError, 500, "error"),
)
"""``(error class, HTTP status, code)``, most specific first: the first match answers."""

LINK_STATUS: Final = {
    LinkRefusal.TAMPERED: 403,
    LinkRefusal.UNKNOWN_KEY: 403,
    LinkRefusal.WRONG_AUDIENCE: 403,
    LinkRefusal.SIGNER_CANNOT_READ: 403,
    LinkRefusal.EXPIRED: 410,
    LinkRefusal.REVOKED: 410,
    LinkRefusal.USED: 410,
    LinkRefusal.DELETED: 410,
    LinkRefusal.CHANGED: 410,
    LinkRefusal.FILE_EXPIRED: 410,
}
"""The status of each link refusal: 403 for a link that never was good, 410 for one that was."""


def status_of(exc: DocbinderError) -> tuple[int, str]:
    """``(status, code)`` of ``exc`` from :data:`STATUS_FOR` (and :data:`LINK_STATUS`)."""
    if isinstance(exc, LinkRefused):
        return LINK_STATUS[exc.reason], exc.reason.value
    for cls, status, code in STATUS_FOR:
        if isinstance(exc, cls):
            return status, code
    return 500, "error"  # pragma: no cover - DocbinderError is the last row


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    """The JSON body of an error answer."""
    return {"error": {"code": code, "message": " ".join(message.split())[:500]}}


def error_response(exc: DocbinderError) -> JSONResponse:
    """The HTTP answer for ``exc``; storage faults are logged with their whole message."""
    status, code = status_of(exc)
    if status >= 500:
        log.warning("HTTP request failed: %s", exc)
    message = str(exc) if isinstance(exc, ConfigurationError | LinkRefused) else public_message(exc)
    return JSONResponse(error_body(code, message), status_code=status)
