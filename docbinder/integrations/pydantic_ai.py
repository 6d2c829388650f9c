"""docbinder's agent tools as a pydantic-ai toolset (ADR 0017).

::

    from pydantic_ai import Agent
    from docbinder.integrations.pydantic_ai import docbinder_toolset

    agent = Agent("openai:gpt-5", toolsets=[docbinder_toolset(run)])
    result = await agent.run("Write notes.md, then read it back")

:func:`docbinder_toolset` returns a :class:`pydantic_ai.toolsets.FunctionToolset`
whose tools are rendered from :class:`docbinder.toolset.DocbinderToolset`:
the same names, descriptions and JSON Schemas as every other rendering
(``Tool.from_schema``; the tool set checks the arguments with the coercion of
the Python tools, so a Chart.js spec, a dict for a ``.json`` file, rows for
``.csv``, a ``data:`` URI or ``"pdf, html"`` work as over MCP). The tools whose
schema accepts open objects (``write_file``, ``create_chart``,
``read_documents``) are marked ``strict=False``; pydantic-ai infers strict mode
for the others (ADR 0023). Tools are async and never block the event loop.

Each call returns a :class:`pydantic_ai.messages.ToolReturn`: the model sees
the unified tool-result text, followed, for ``read_documents``, by each image
(and each PDF without text) as :class:`pydantic_ai.messages.BinaryContent`
inside the tool result, so a vision model receives them; ``metadata`` (kept
in the message history, never sent to the model) is
``{"file_ids": [...], "document_ids": [...]}``. A failed call raises
:class:`pydantic_ai.exceptions.ToolFailed` with docbinder's one-line message:
the model sees the failure without a retry prompt.

Needs the ``[pydantic-ai]`` extra (``pydantic-ai-slim``); without it importing
this module raises :class:`~docbinder.domain.errors.MissingExtra`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from docbinder.domain.errors import MissingExtra
from docbinder.domain.model import ContentKind
from docbinder.domain.providers import Provider, ProviderFileRef
from docbinder.integrations._rendering import artifact, toolset_for

try:
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.messages import BinaryContent, ToolReturn, UploadedFile
    from pydantic_ai.tools import RunContext, Tool
    from pydantic_ai.toolsets import FunctionToolset
except ModuleNotFoundError as exc:  # tested by simulating the missing package
    raise MissingExtra(
        "docbinder's pydantic-ai toolset", "pydantic-ai", "pydantic-ai-slim"
    ) from exc

if TYPE_CHECKING:
    from docbinder.application.binder import Run
    from docbinder.tools.datasources import DataSource
    from docbinder.tools.images import ImageGenerator
    from docbinder.toolset import DocbinderToolset, ToolOutcome, ToolSpec

__all__ = ["docbinder_toolset", "render_tool", "uploaded_file"]

_BINARY_MIME_TYPES = frozenset({"application/pdf"})
"""Binary documents passed to the model as binary content (models read PDFs)."""


def docbinder_toolset(
    run: Run | DocbinderToolset,
    *,
    data_sources: Mapping[str, DataSource] | None = None,
    image_generator: ImageGenerator | None = None,
    id: str | None = "docbinder",
) -> FunctionToolset[Any]:
    """A :class:`FunctionToolset` with one tool per tool of the docbinder tool set, in its order.

    ``run`` is the agent run, or a ready :class:`~docbinder.toolset.DocbinderToolset`
    to share with other renderings; ``data_sources`` and ``image_generator``
    configure a new tool set (``TypeError`` with a ready one). ``id`` names the
    toolset for pydantic-ai (durable execution needs one).
    """
    toolset = toolset_for(run, data_sources=data_sources, image_generator=image_generator)
    return FunctionToolset([render_tool(toolset, spec) for spec in toolset.specs], id=id)


def render_tool(toolset: DocbinderToolset, spec: ToolSpec) -> Tool[Any]:
    """The pydantic-ai :class:`Tool` for ``spec`` of ``toolset``."""
    name = spec.name

    async def call(ctx: RunContext[Any], **arguments: Any) -> ToolReturn:
        model = getattr(ctx.model, "model_name", None)
        return _render(
            await toolset.acall(
                name,
                arguments,
                tool_call_id=ctx.tool_call_id,
                model=model if isinstance(model, str) else None,
            )
        )

    tool = Tool.from_schema(
        call,
        name=name,
        description=spec.description,
        json_schema=dict(spec.parameters),
        takes_ctx=True,
    )
    if not spec.strict:
        # Its schema accepts open objects; left to pydantic-ai's inference, a model provider
        # could be asked for strict mode with it (ADR 0023).
        tool.strict = False
    return tool


def _render(outcome: ToolOutcome) -> ToolReturn:
    """The :class:`ToolReturn` for ``outcome``; :class:`ToolFailed` for an error."""
    if outcome.is_error:
        raise ToolFailed(outcome.text)
    binaries = [
        BinaryContent(data=part.data, media_type=part.mime_type)
        for part in outcome.parts
        if part.data is not None
        and (
            part.kind is ContentKind.IMAGE
            or (part.kind is ContentKind.BINARY and part.mime_type in _BINARY_MIME_TYPES)
        )
    ]
    value: Any = [outcome.text, *binaries] if binaries else outcome.text
    return ToolReturn(return_value=value, metadata=artifact(outcome))


_UPLOADED_PROVIDER_NAMES = {
    Provider.OPENAI: "openai",
    Provider.ANTHROPIC: "anthropic",
    Provider.GEMINI: "google",
}
"""pydantic-ai's ``UploadedFile.provider_name`` for each provider docbinder hands files to."""


def uploaded_file(ref: ProviderFileRef) -> UploadedFile:
    """A file ``run.provide_file`` handed to a provider, as pydantic-ai's own ``UploadedFile`` (B22).

    Put it in a user prompt (``agent.run(["Summarize", uploaded_file(ref)])``) or a
    ``ToolReturn``'s content: pydantic-ai's model for that provider sends it as the
    provider's native block (Anthropic ``document``/``image`` with a file source,
    OpenAI ``input_file``/``input_image``, Gemini ``file_data``). For Gemini the
    id is the file's URI, as pydantic-ai's ``GoogleModel`` expects.
    """
    file_id = ref.file_id
    if ref.provider is Provider.GEMINI:
        if ref.uri is None:
            raise ValueError(f"Gemini copy {ref.file_id} has no URI recorded")
        file_id = ref.uri
    return UploadedFile(
        file_id,
        _UPLOADED_PROVIDER_NAMES[ref.provider],  # type: ignore[arg-type]
        media_type=ref.mime_type,
    )
