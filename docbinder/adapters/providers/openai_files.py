"""OpenAI's Files API and Responses content parts through the ``openai`` SDK (B22).

Files are uploaded with ``purpose="user_data"`` (``POST /v1/files``), optionally
with ``expires_after`` (``anchor: created_at``, 3600 to 2592000 seconds); the
answer's ``expires_at`` (Unix seconds) is recorded. The bytes stream from a
file object (the SDK sends it as the multipart body in 64 KiB reads), and the
upload is sent once (``max_retries=0`` for that request: OpenAI keeps no
idempotency key for files). OpenAI keeps no metadata on a file but its
``filename``, which carries the upload token; :meth:`OpenAIFiles.find` pages
through ``GET /v1/files?purpose=user_data`` (``after`` cursors) for it.
Source of the shapes: the SDK's ``FileObject``, ``FileDeleted``,
``SyncCursorPage``, ``ResponseInputFileParam`` and ``ResponseInputImageParam``
(OpenAI API reference, Files and Responses).
"""

from __future__ import annotations

import base64
from collections.abc import Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, BinaryIO

from docbinder.adapters.providers import is_image
from docbinder.domain.errors import MissingExtra, ProviderError
from docbinder.domain.providers import Provider, ProviderFileRef, UploadedCopy, token_of

if TYPE_CHECKING:
    from openai.types.responses import ResponseInputFileParam, ResponseInputImageParam

try:
    import openai
except ImportError as err:  # pragma: no cover - the extra is missing
    raise MissingExtra("the OpenAI Files bridge", "providers", "openai") from err

_NAME = Provider.OPENAI.value


class OpenAIFiles:
    """:class:`~docbinder.ports.providers.ProviderFiles` over an ``openai.OpenAI`` client.

    ``account`` is the host's name for the client's API key (an id);
    ``expires_after`` the seconds after which OpenAI deletes the upload
    (``None``: kept until deleted).
    """

    provider = Provider.OPENAI

    def __init__(
        self, client: openai.OpenAI, account: str = "default", *, expires_after: int | None = None
    ) -> None:
        self._client = client
        self.account = account
        self._expires_after = expires_after

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> UploadedCopy:
        """``POST /v1/files`` once, streaming ``source``; :class:`ProviderError` on any API or connection error."""
        del size  # the SDK learns it from the seekable source (Content-Length)
        extra: dict[str, Any] = {}
        if self._expires_after is not None:
            extra["expires_after"] = {"anchor": "created_at", "seconds": self._expires_after}
        try:
            answer = self._client.with_options(max_retries=0).files.create(
                file=(file_name, source, mime_type), purpose="user_data", **extra
            )
        except openai.APIError as err:
            raise _error("upload", err) from err
        return _copy(answer)

    def find(self, token: str) -> list[UploadedCopy]:
        """Every ``user_data`` file whose ``filename`` carries ``token``: all pages of ``GET /v1/files``."""
        return self.find_many([token])[token]

    def find_many(self, tokens: Collection[str]) -> dict[str, list[UploadedCopy]]:
        """The files of each of ``tokens``, from one pass over all pages of ``GET /v1/files``.

        OpenAI filters a listing by ``purpose`` only, never by name, so one
        pass serves every token of a reconciliation (ADR 0132).
        """
        found: dict[str, list[UploadedCopy]] = {token: [] for token in tokens}
        try:
            for f in self._client.files.list(purpose="user_data"):
                token = token_of(f.filename)
                if token in found:
                    found[token].append(_copy(f))
        except openai.APIError as err:
            raise _error("list", err) from err
        return found

    def exists(self, file_id: str) -> bool:
        """``GET /v1/files/{id}``: ``False`` on 404."""
        try:
            self._client.files.retrieve(file_id)
        except openai.NotFoundError:
            return False
        except openai.APIError as err:
            raise _error("retrieve", err) from err
        return True

    def delete(self, file_id: str) -> bool:
        """``DELETE /v1/files/{id}``: ``False`` on 404 (already gone)."""
        try:
            answer = self._client.files.delete(file_id)
        except openai.NotFoundError:
            return False
        except openai.APIError as err:
            raise _error("delete", err) from err
        if not answer.deleted:
            raise ProviderError(f"OpenAI did not delete file {file_id}", provider=_NAME)
        return True


def _copy(answer: Any) -> UploadedCopy:
    """An ``openai.types.FileObject`` as an :class:`UploadedCopy`."""
    expires = None if answer.expires_at is None else datetime.fromtimestamp(answer.expires_at, UTC)
    return UploadedCopy(answer.id, None, expires, answer.filename)


def _error(operation: str, err: openai.APIError) -> ProviderError:
    status = getattr(err, "status_code", None)
    return ProviderError(f"OpenAI file {operation} failed: {err}", provider=_NAME, status=status)


def content_part(ref: ProviderFileRef) -> ResponseInputFileParam | ResponseInputImageParam:
    """The Responses API input part naming an uploaded file: ``input_image`` for images, else ``input_file``."""
    if is_image(ref.mime_type):
        image: ResponseInputImageParam = {
            "type": "input_image",
            "file_id": ref.file_id,
            "detail": "auto",
        }
        return image
    part: ResponseInputFileParam = {"type": "input_file", "file_id": ref.file_id}
    return part


def inline_part(
    data: bytes, file_name: str, mime_type: str
) -> ResponseInputFileParam | ResponseInputImageParam:
    """The same parts with the bytes inline: a base64 ``data:`` URL (``image_url`` or ``file_data``)."""
    url = f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"
    if is_image(mime_type):
        image: ResponseInputImageParam = {"type": "input_image", "image_url": url, "detail": "auto"}
        return image
    part: ResponseInputFileParam = {"type": "input_file", "file_data": url, "filename": file_name}
    return part
