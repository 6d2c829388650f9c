"""Anthropic's Files API and Messages content blocks through the ``anthropic`` SDK (B22).

Files are uploaded with ``POST /v1/files`` (optionally ``expires_in_seconds``,
3600 to 7776000); the answer's ``expires_at`` (RFC 3339, ``null``: kept until
deleted) is recorded. The bytes stream from a file object, and the upload is
sent once (``max_retries=0`` for that request). A file keeps only its
``filename`` (1 to 500 characters) besides its type and size, so the name
carries the upload token; :meth:`AnthropicFiles.find` pages through
``GET /v1/files`` (``page`` / ``next_page`` cursors, 1000 a page, the largest
Anthropic allows) for it. Blocks are ``image`` for images and ``document``
for the rest, with a ``file`` source naming the id, or inline: ``base64`` for
images and PDFs, ``text`` for plain text. Source of the shapes: the SDK's
``FileMetadata``, ``DeletedFile``, ``SyncPageCursor``, ``DocumentBlockParam``,
``ImageBlockParam`` and their source params (Anthropic API reference, Files
and Messages).
"""

from __future__ import annotations

import base64
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from docbinder.adapters.providers import is_image
from docbinder.domain.errors import InvalidInput, MissingExtra, ProviderError
from docbinder.domain.providers import Provider, ProviderFileRef, UploadedCopy, token_of

if TYPE_CHECKING:
    from anthropic.types import DocumentBlockParam, ImageBlockParam

try:
    import anthropic
except ImportError as err:  # pragma: no cover - the extra is missing
    raise MissingExtra("the Anthropic Files bridge", "providers", "anthropic") from err

_NAME = Provider.ANTHROPIC.value


class AnthropicFiles:
    """:class:`~docbinder.ports.providers.ProviderFiles` over an ``anthropic.Anthropic`` client.

    ``account`` is the host's name for the client's API key (an id);
    ``expires_in`` the seconds after which Anthropic drops the upload
    (``None``: kept until deleted).
    """

    provider = Provider.ANTHROPIC

    def __init__(
        self,
        client: anthropic.Anthropic,
        account: str = "default",
        *,
        expires_in: int | None = None,
    ) -> None:
        self._client = client
        self.account = account
        self._expires_in = expires_in

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> UploadedCopy:
        """``POST /v1/files`` once, streaming ``source``; :class:`ProviderError` on any API or connection error."""
        del size  # the SDK learns it from the seekable source (Content-Length)
        extra: dict[str, Any] = {}
        if self._expires_in is not None:
            extra["expires_in_seconds"] = self._expires_in
        try:
            answer = self._client.with_options(max_retries=0).files.upload(
                file=(file_name, source, mime_type), **extra
            )
        except anthropic.APIError as err:
            raise _error("upload", err) from err
        return UploadedCopy(answer.id, None, answer.expires_at, answer.filename)

    def find(self, token: str) -> list[UploadedCopy]:
        """Every file whose ``filename`` carries ``token``: all pages of ``GET /v1/files``."""
        return self.find_many([token])[token]

    def find_many(self, tokens: Collection[str]) -> dict[str, list[UploadedCopy]]:
        """The files of each of ``tokens``, from one pass over all pages of ``GET /v1/files``.

        Anthropic's listing takes no filter by name, so one pass serves every
        token of a reconciliation (ADR 0132).
        """
        found: dict[str, list[UploadedCopy]] = {token: [] for token in tokens}
        try:
            for f in self._client.files.list(limit=1000):
                token = token_of(f.filename)
                if token in found:
                    found[token].append(UploadedCopy(f.id, None, f.expires_at, f.filename))
        except anthropic.APIError as err:
            raise _error("list", err) from err
        return found

    def exists(self, file_id: str) -> bool:
        """``GET /v1/files/{id}``: ``False`` on 404."""
        try:
            self._client.files.retrieve_metadata(file_id)
        except anthropic.NotFoundError:
            return False
        except anthropic.APIError as err:
            raise _error("retrieve", err) from err
        return True

    def delete(self, file_id: str) -> bool:
        """``DELETE /v1/files/{id}``: ``False`` on 404 (already gone)."""
        try:
            self._client.files.delete(file_id)
        except anthropic.NotFoundError:
            return False
        except anthropic.APIError as err:
            raise _error("delete", err) from err
        return True


def _error(operation: str, err: anthropic.APIError) -> ProviderError:
    status = getattr(err, "status_code", None)
    return ProviderError(f"Anthropic file {operation} failed: {err}", provider=_NAME, status=status)


def content_block(ref: ProviderFileRef) -> DocumentBlockParam | ImageBlockParam:
    """The Messages block naming an uploaded file: ``image`` for images, else ``document``."""
    if is_image(ref.mime_type):
        image: ImageBlockParam = {
            "type": "image",
            "source": {"type": "file", "file_id": ref.file_id},
        }
        return image
    document: DocumentBlockParam = {
        "type": "document",
        "source": {"type": "file", "file_id": ref.file_id},
        "title": ref.file_name,
    }
    return document


def inline_block(
    data: bytes, file_name: str, mime_type: str
) -> DocumentBlockParam | ImageBlockParam:
    """The block with the bytes inline: ``base64`` images and PDFs, ``text`` for ``text/plain``.

    Raises :class:`InvalidInput` for other types (Anthropic takes them only by file id).
    """
    bare = mime_type.split(";", 1)[0].strip().lower()
    encoded = base64.b64encode(data).decode("ascii")
    if is_image(bare):
        image: ImageBlockParam = {
            "type": "image",
            "source": {"type": "base64", "media_type": cast(Any, bare), "data": encoded},
        }
        return image
    if bare == "application/pdf":
        pdf: DocumentBlockParam = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": encoded},
            "title": file_name,
        }
        return pdf
    if bare.startswith("text/"):
        text: DocumentBlockParam = {
            "type": "document",
            "source": {
                "type": "text",
                "media_type": "text/plain",
                "data": data.decode("utf-8", "replace"),
            },
            "title": file_name,
        }
        return text
    raise InvalidInput(
        f"Anthropic takes {bare} only as an uploaded file: hand it over with provide_file first"
    )
