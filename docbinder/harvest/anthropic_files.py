"""Anthropic code-execution output files as an :class:`~docbinder.harvest.sources.OutputSource` (extra ``providers``).

Claude's code execution tool reports each file its code created as a
``file_id`` inside the tool result block (``bash_code_execution_tool_result``
-> ``bash_code_execution_output``, or the older ``code_execution_tool_result``
-> ``code_execution_output``; Anthropic docs, "Code execution tool"). The
bytes are fetched with the Files API (``GET /v1/files/{id}`` for the name,
type and size, ``GET /v1/files/{id}/content`` for the bytes; beta
``files-api-2025-04-14``), through the official ``anthropic`` SDK's
``client.beta.files``::

    from anthropic import Anthropic
    from docbinder.harvest import harvest
    from docbinder.harvest.anthropic_files import AnthropicCodeExecutionFiles

    message = client.beta.messages.create(...)   # with the code execution tool
    report = harvest(run, AnthropicCodeExecutionFiles.from_message(Anthropic(), message))

The message's container expires (``container.expires_at``); harvest right after the turn.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import attrs

from docbinder.harvest.sources import OutputFile, SkippedOutput, streamed_download

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    from docbinder.domain.errors import MissingExtra

    raise MissingExtra("Anthropic code-execution files", "providers", "anthropic") from exc

OUTPUT_TYPES = ("bash_code_execution_output", "code_execution_output")
"""The content blocks of a code execution result that name an output file by ``file_id``."""

FILES_BETA = "files-api-2025-04-14"
"""The ``anthropic-beta`` value of the Files API on SDKs that offer it under ``client.beta``."""


def _files_api(client: Any) -> tuple[Any, dict[str, Any]]:
    """The SDK's Files API resource and the extra arguments its calls take."""
    files = getattr(client, "files", None)
    if files is not None and hasattr(files, "retrieve_metadata"):
        return files, {}
    return client.beta.files, {"betas": [FILES_BETA]}


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return value


def output_file_ids(message: Any) -> list[str]:
    """Every output ``file_id`` in a Messages API result (the SDK's message or its dict), in order."""
    data = _plain(message) or {}
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            file_id = value.get("file_id")
            if (
                value.get("type") in OUTPUT_TYPES
                and isinstance(file_id, str)
                and file_id not in found
            ):
                found.append(file_id)
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(data.get("content") if isinstance(data, dict) else None)
    return found


@attrs.define
class AnthropicCodeExecutionFiles:
    """The output files of Claude's code execution, by ``file_id`` (an :class:`OutputSource`).

    ``client`` is an ``anthropic.Anthropic``; ``file_ids`` the output files
    (:func:`output_file_ids` reads them from a message);
    ``container_id`` the code execution container (the ``sandbox_id``
    recorded; ``"anthropic-code-execution"`` when unknown). ``path`` and
    ``name`` are the file's ``filename``; ``size`` its ``size_bytes``;
    ``mime_type`` its ``mime_type``. A file the API no longer has (HTTP 404) or
    marks not ``downloadable`` is skipped with the reason; other API errors
    propagate as the SDK's exceptions.
    """

    client: Any
    file_ids: Sequence[str]
    container_id: str | None = None

    @classmethod
    def from_message(cls, client: Any, message: Any) -> AnthropicCodeExecutionFiles:
        """The output files of one Messages API result, with its ``container.id``."""
        data = _plain(message) or {}
        container = data.get("container") if isinstance(data, dict) else None
        container_id = container.get("id") if isinstance(container, dict) else None
        return cls(client, output_file_ids(data), container_id)

    @property
    def sandbox_id(self) -> str:
        """The container id, or ``anthropic-code-execution``."""
        return self.container_id or "anthropic-code-execution"

    def outputs(self) -> Iterator[OutputFile | SkippedOutput]:
        """Each file's metadata, then an :class:`OutputFile` that streams its content."""
        files, extra = _files_api(self.client)
        for file_id in self.file_ids:
            try:
                meta = files.retrieve_metadata(file_id, **extra)
            except anthropic.NotFoundError:
                yield SkippedOutput(file_id, "not found in the Files API (expired or deleted)")
                continue
            if getattr(meta, "downloadable", True) is False:
                yield SkippedOutput(str(meta.filename), "the Files API marks it not downloadable")
                continue
            name = str(meta.filename)
            yield OutputFile(
                path=name,
                name=name.rsplit("/", 1)[-1],
                size=int(meta.size_bytes),
                mime_type=getattr(meta, "mime_type", None) or None,
                open=self._opener(file_id),
            )

    def _opener(self, file_id: str) -> Any:
        files, extra = _files_api(self.client)

        def open_it() -> BinaryIO:
            return streamed_download(
                files.with_streaming_response.download(file_id, **extra),
                (
                    (anthropic.NotFoundError, "not found in the Files API (expired or deleted)"),
                    (anthropic.BadRequestError, "the Files API refused the download: {exc}"),
                ),
            )

        return open_it
