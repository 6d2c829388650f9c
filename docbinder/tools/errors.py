"""Errors of the agent tools, rooted in :class:`~docbinder.domain.errors.DocbinderError`.

A data source or an image service that fails (HTTP status, timeout, refused
connection, missing object) raises one of these; nothing is stored then. Each
error also derives from the builtin a caller would catch: a failed remote call
is an :class:`OSError`, a missing object a :class:`FileNotFoundError`.
"""

from __future__ import annotations

from docbinder.domain.errors import DocbinderError


class ExternalServiceError(DocbinderError, OSError):
    """A remote or local service a tool depends on failed.

    ``status`` is the HTTP status code where there was one (``None`` for
    timeouts and connection faults); ``retryable`` says whether repeating the
    same call later may succeed (timeouts, connection faults, HTTP 429 and 5xx).
    """

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class DataSourceError(ExternalServiceError):
    """A data source could not deliver a file (HTTP error, timeout, S3 fault, I/O error)."""


class DataSourceNotFound(DataSourceError, FileNotFoundError):
    """The data source has no file under the requested path, URL or key."""


class ImageGenerationError(ExternalServiceError):
    """The image service refused the request or answered with something that is not an image."""


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status means "try again later": 408, 425, 429 and every 5xx (RFC 9110)."""
    return status in {408, 425, 429} or status >= 500
