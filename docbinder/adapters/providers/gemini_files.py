"""Gemini's Files API and content parts through the ``google-genai`` SDK (B22).

``client.files.upload`` runs the resumable upload (``POST /upload/v1beta/files``,
then the upload URL with ``upload, finalize``); the answer's ``name``
(``files/...``) is the id, its ``uri`` what a ``file_data`` part names, and
its ``expirationTime`` (48 hours after upload) the expiry. The SDK reads the
bytes from the file object in chunks of 8 MiB, one request each. The file's
``displayName`` (at most 512 characters) carries the upload token;
:meth:`GeminiFiles.find` pages through ``GET /v1beta/files`` (``pageToken`` /
``nextPageToken``) for it. Source of the shapes: the SDK's ``types.File``,
``types.ListFilesResponse``, ``types.Part``, ``types.FileData`` and
``types.Blob`` (Gemini API reference, Files and generateContent).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC
from typing import Any, BinaryIO, cast

from docbinder.domain.errors import MissingExtra, ProviderError
from docbinder.domain.providers import Provider, ProviderFileRef, UploadedCopy, token_of

try:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types
except ImportError as err:  # pragma: no cover - the extra is missing
    raise MissingExtra("the Gemini Files bridge", "adk", "google-genai") from err

_NAME = Provider.GEMINI.value


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP clients' own errors (a cut connection, a timeout): the SDK raises them as they are."""
    found: list[type[BaseException]] = [OSError]
    for module in ("httpx", "httpx2"):
        try:
            found.append(__import__(module).HTTPError)
        except (ImportError, AttributeError):  # pragma: no cover - that client is not installed
            continue
    return tuple(found)


_TRANSPORT = _transport_errors()

__all__ = ["GeminiFiles", "content_part", "inline_part"]


class GeminiFiles:
    """:class:`~docbinder.ports.providers.ProviderFiles` over a ``google.genai.Client`` (Gemini API, not Vertex)."""

    provider = Provider.GEMINI

    def __init__(self, client: genai.Client, account: str = "default") -> None:
        self._client = client
        self.account = account

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> UploadedCopy:
        """The resumable upload, streaming ``source``; :class:`ProviderError` on any API, connection error or odd answer."""
        del size  # the SDK measures the seekable source itself
        try:
            answer = self._client.files.upload(
                file=cast(Any, source),
                config=types.UploadFileConfig(mime_type=mime_type, display_name=file_name[:512]),
            )
        except genai_errors.APIError as err:
            raise _error("upload", err) from err
        except (KeyError, ValueError) as err:  # the SDK's own checks of the upload protocol
            raise ProviderError(f"Gemini file upload failed: {err}", provider=_NAME) from err
        except _TRANSPORT as err:
            raise ProviderError(f"Gemini file upload failed: {err!r}", provider=_NAME) from err
        if not answer.name:
            raise ProviderError("Gemini answered an upload without a file name", provider=_NAME)
        return _copy(answer)

    def find(self, token: str) -> list[UploadedCopy]:
        """Every file whose ``displayName`` carries ``token``: all pages of ``GET /v1beta/files``."""
        return self.find_many([token])[token]

    def find_many(self, tokens: Collection[str]) -> dict[str, list[UploadedCopy]]:
        """The files of each of ``tokens``, from one pass over all pages of ``GET /v1beta/files``.

        Gemini's listing takes only ``pageSize`` and ``pageToken``, so one
        pass serves every token of a reconciliation (ADR 0132).
        """
        found: dict[str, list[UploadedCopy]] = {token: [] for token in tokens}
        try:
            for f in self._client.files.list(config=types.ListFilesConfig(page_size=100)):
                token = token_of(f.display_name)
                if f.name and token in found:
                    found[token].append(_copy(f))
        except genai_errors.APIError as err:
            raise _error("list", err) from err
        except _TRANSPORT as err:
            raise ProviderError(f"Gemini file list failed: {err!r}", provider=_NAME) from err
        return found

    def exists(self, file_id: str) -> bool:
        """``GET /v1beta/{name}``: ``False`` on 404."""
        try:
            self._client.files.get(name=file_id)
        except genai_errors.APIError as err:
            if err.code == 404:
                return False
            raise _error("get", err) from err
        except _TRANSPORT as err:
            raise ProviderError(f"Gemini file get failed: {err!r}", provider=_NAME) from err
        return True

    def delete(self, file_id: str) -> bool:
        """``DELETE /v1beta/{name}``: ``False`` on 404 (already gone)."""
        try:
            self._client.files.delete(name=file_id)
        except genai_errors.APIError as err:
            if err.code == 404:
                return False
            raise _error("delete", err) from err
        except _TRANSPORT as err:
            raise ProviderError(f"Gemini file delete failed: {err!r}", provider=_NAME) from err
        return True


def _copy(answer: types.File) -> UploadedCopy:
    assert answer.name is not None
    expires = None if answer.expiration_time is None else answer.expiration_time.astimezone(UTC)
    return UploadedCopy(answer.name, answer.uri, expires, answer.display_name)


def _error(operation: str, err: genai_errors.APIError) -> ProviderError:
    return ProviderError(f"Gemini file {operation} failed: {err}", provider=_NAME, status=err.code)


def content_part(ref: ProviderFileRef) -> types.Part:
    """A ``file_data`` part naming the uploaded file by its URI and MIME type."""
    if ref.uri is None:
        raise ProviderError(f"Gemini copy {ref.file_id} has no URI recorded", provider=_NAME)
    return types.Part(file_data=types.FileData(file_uri=ref.uri, mime_type=ref.mime_type))


def inline_part(data: bytes, file_name: str, mime_type: str) -> types.Part:
    """An ``inline_data`` part with the bytes (the SDK sends them base64 encoded)."""
    del file_name  # inline parts carry no name
    return types.Part(inline_data=types.Blob(data=data, mime_type=mime_type))
