"""What the framework integrations share when they render the docbinder tool set (ADR 0017).

Every framework gets the same tools, names, descriptions and JSON Schemas from
:class:`docbinder.toolset.DocbinderToolset`; this module holds the pieces each
rendering needs: building the tool set from a run, the host-side record of what
a call produced, and the content parts a framework shows natively (images).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING

from docbinder.domain.model import ContentPart

if TYPE_CHECKING:
    from docbinder.application.binder import Run
    from docbinder.tools.datasources import DataSource
    from docbinder.tools.images import ImageGenerator
    from docbinder.toolset import DocbinderToolset, ToolOutcome


def toolset_for(
    run: Run | DocbinderToolset,
    *,
    data_sources: Mapping[str, DataSource] | None = None,
    image_generator: ImageGenerator | None = None,
) -> DocbinderToolset:
    """The tool set for ``run``: a given :class:`DocbinderToolset` as is, else a new one.

    ``data_sources`` and ``image_generator`` go to the new tool set; passing
    them with a ready tool set is a ``TypeError`` (they would be ignored).
    """
    from docbinder.application.binder import Run

    if isinstance(run, Run):
        from docbinder.toolset import DocbinderToolset

        return DocbinderToolset(run, data_sources=data_sources, image_generator=image_generator)
    if data_sources is not None or image_generator is not None:
        raise TypeError("data_sources and image_generator belong to the DocbinderToolset given")
    return run


def artifact(outcome: ToolOutcome) -> dict[str, list[str]]:
    """The host-side record of a call: ``{"file_ids": [...], "document_ids": [...]}``.

    Ids of the FileItems the call produced or changed and of the ChatDocuments
    it attached (or read), in order; plain lists so checkpointers can store it.
    """
    return {"file_ids": list(outcome.file_ids), "document_ids": list(outcome.document_ids)}


def image_parts(outcome: ToolOutcome) -> tuple[ContentPart, ...]:
    """The image parts of ``outcome`` that carry their bytes (within the tool set's cap)."""
    return outcome.images


def base64_data(part: ContentPart) -> str:
    """``part.data`` as standard base64 text (RFC 4648 section 4)."""
    return base64.b64encode(part.data or b"").decode("ascii")


def data_url(part: ContentPart) -> str:
    """``part`` as a ``data:`` URL (RFC 2397): ``data:<MIME type>;base64,<data>``."""
    return f"data:{part.mime_type};base64,{base64_data(part)}"
