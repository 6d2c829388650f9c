"""OpenAI container files (``cfile_...``) as an :class:`~docbinder.harvest.sources.OutputSource` (extra ``providers``).

The code interpreter tool of the Responses API runs in a container; the files
it writes are container files, listed by ``GET /v1/containers/{id}/files`` and
read by ``GET /v1/containers/{id}/files/{file_id}/content`` (OpenAI API
reference, "Containers" and "Container Files"). A container expires after
20 minutes without use and its files with it, so harvest right after the
step that wrote them::

    from openai import OpenAI
    from docbinder.harvest import harvest
    from docbinder.harvest.openai_containers import OpenAIContainerFiles

    report = harvest(run, OpenAIContainerFiles(OpenAI(), container_id))

Everything goes through the official ``openai`` SDK's ``client.containers.files``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import attrs

from docbinder.harvest.sources import OutputFile, SkippedOutput, streamed_download

try:
    import openai
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    from docbinder.domain.errors import MissingExtra

    raise MissingExtra("OpenAI container files", "providers", "openai") from exc

DEFAULT_SOURCES = ("assistant",)
"""Container files written by the model's code (``source`` ``assistant``), not uploads of the user."""


def container_files_in_response(response: Any) -> list[tuple[str, str]]:
    """``(container_id, file_id)`` of every ``container_file_citation`` in a Responses API result.

    The code interpreter cites the files it made in the output text's
    annotations (``{"type": "container_file_citation", "container_id",
    "file_id", "filename", ...}``); ``response`` is the SDK's ``Response`` or
    its ``model_dump()``. In order of appearance, without repeats.
    """
    data = response.model_dump() if hasattr(response, "model_dump") else response
    found: list[tuple[str, str]] = []
    for item in (data or {}).get("output") or []:
        for content in item.get("content") or [] if isinstance(item, dict) else []:
            for note in content.get("annotations") or [] if isinstance(content, dict) else []:
                if isinstance(note, dict) and note.get("type") == "container_file_citation":
                    pair = (str(note.get("container_id")), str(note.get("file_id")))
                    if pair not in found:
                        found.append(pair)
    return found


@attrs.define
class OpenAIContainerFiles:
    """The files of one OpenAI container: all of them (``file_ids`` ``None``) or the ones named.

    ``client`` is an ``openai.OpenAI``; ``container_id`` the container
    (``cntr_...``, also the ``sandbox_id`` recorded). Listed files are kept
    when their ``source`` is in ``sources`` (default: written by the model's
    code). ``path`` is the container path (``/mnt/data/chart.png``), ``size``
    the ``bytes`` the API reports (a download of another length is refused as
    incomplete). An expired or deleted container or file (HTTP 404) is
    reported as skipped with the reason, never raised; other API errors
    (authentication, connection) propagate as the SDK's exceptions.
    """

    client: Any
    container_id: str
    file_ids: Iterable[str] | None = None
    sources: tuple[str, ...] = DEFAULT_SOURCES
    page_size: int = 100

    @property
    def sandbox_id(self) -> str:
        """The container id."""
        return self.container_id

    def outputs(self) -> Iterator[OutputFile | SkippedOutput]:
        """Each container file as an :class:`OutputFile` (listed, or retrieved by id)."""
        files = self.client.containers.files
        if self.file_ids is not None:
            for file_id in self.file_ids:
                try:
                    meta = files.retrieve(file_id, container_id=self.container_id)
                except openai.NotFoundError:
                    yield SkippedOutput(file_id, "not found in the container (expired or deleted)")
                    continue
                yield self._output(meta)
            return
        try:
            for meta in files.list(self.container_id, limit=self.page_size, order="asc"):
                if self.sources and meta.source not in self.sources:
                    continue
                yield self._output(meta)
        except openai.NotFoundError:
            yield SkippedOutput(self.container_id, "container not found (expired or deleted)")

    def _output(self, meta: Any) -> OutputFile:
        path = str(meta.path)
        name = path.rstrip("/").rsplit("/", 1)[-1] or str(meta.id)
        return OutputFile(path=path, name=name, size=int(meta.bytes), open=self._opener(meta.id))

    def _opener(self, file_id: str) -> Any:
        content = self.client.containers.files.content

        def open_it() -> BinaryIO:
            return streamed_download(
                content.with_streaming_response.retrieve(file_id, container_id=self.container_id),
                ((openai.NotFoundError, "not found in the container (expired or deleted)"),),
            )

        return open_it
