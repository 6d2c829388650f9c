"""docbinder's agent tools as function tools of the OpenAI Agents SDK (ADR 0017).

::

    from agents import Agent, Runner
    from docbinder.integrations.openai_agents import docbinder_tools

    agent = Agent(name="analyst", tools=docbinder_tools(run))  # run = binder.start_new_run(...)
    result = await Runner.run(agent, "Write notes.md, then read it back")

Each tool is an :class:`agents.FunctionTool` rendered from
:class:`docbinder.toolset.DocbinderToolset` (same names, descriptions and
arguments as every other rendering) with a strict JSON schema
(:func:`docbinder.toolset.specs.strict_schema`): arguments the tool set marks
optional become nullable, as strict mode requires every property to be
listed, and a ``null`` sent for one means "not given"; the arguments strict
mode cannot describe (``write_file.content`` as an object,
``create_chart.spec``, ``read_documents.documentList`` as an object) are
offered as JSON text, which the tool set parses with the same coercion as
every other host (ADR 0023). Tools run asynchronously and never block the
event loop.

What the model gets back (``function_call_output``):

* the unified tool-result text (a producing tool's ``documentList ref:`` and
  ``file id:`` lines, ``read_documents``' extracted text and unresolved
  references) as text;
* ``read_documents``' images as :class:`agents.ToolOutputImage` (a ``data:``
  URL, ``detail="auto"``) and PDF documents without text as
  :class:`agents.ToolOutputFileContent`, after one :class:`agents.ToolOutputText`.

The host gets ``{"file_ids": [...], "document_ids": [...]}`` in the
``custom_data`` of the run's ``ToolCallOutputItem`` (SDK-only, never sent to
the model). A failed call returns docbinder's one-line message to the model
as the tool output.

Needs the ``[openai-agents]`` extra; without it importing this module raises
:class:`~docbinder.domain.errors.MissingExtra`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from docbinder.domain.errors import InvalidInput, MissingExtra
from docbinder.domain.model import ContentKind
from docbinder.domain.providers import Provider, ProviderFileRef
from docbinder.integrations._rendering import artifact, data_url, image_parts, toolset_for
from docbinder.toolset.specs import make_strict, strict_schema

try:
    from agents import FunctionTool, ToolOutputFileContent, ToolOutputImage, ToolOutputText
    from agents.tool import FunctionToolCustomDataContext
    from agents.tool_context import ToolContext
except ModuleNotFoundError as exc:  # tested by simulating the missing package
    raise MissingExtra("docbinder's OpenAI Agents tools", "openai-agents", "openai-agents") from exc

if TYPE_CHECKING:
    from docbinder.application.binder import Run
    from docbinder.tools.datasources import DataSource
    from docbinder.tools.images import ImageGenerator
    from docbinder.toolset import DocbinderToolset, ToolOutcome, ToolSpec

__all__ = ["docbinder_tools", "file_tool_output", "render_tool", "strict_parameters"]

_FILE_MIME_TYPES = frozenset({"application/pdf"})
"""Binary documents sent as the SDK's file output (the Responses API reads PDFs)."""


def docbinder_tools(
    run: Run | DocbinderToolset,
    *,
    data_sources: Mapping[str, DataSource] | None = None,
    image_generator: ImageGenerator | None = None,
) -> list[FunctionTool]:
    """One strict :class:`agents.FunctionTool` per tool of the docbinder tool set, in its order.

    ``run`` is the agent run, or a ready :class:`~docbinder.toolset.DocbinderToolset`
    to share with other renderings; ``data_sources`` and ``image_generator``
    configure a new tool set (``TypeError`` with a ready one).
    """
    toolset = toolset_for(run, data_sources=data_sources, image_generator=image_generator)
    return [render_tool(toolset, spec) for spec in toolset.specs]


def render_tool(toolset: DocbinderToolset, spec: ToolSpec) -> FunctionTool:
    """The strict :class:`agents.FunctionTool` for ``spec`` of ``toolset``."""
    name = spec.name
    optional = _optional_names(spec.parameters)
    outcomes: dict[str, ToolOutcome] = {}

    async def invoke(ctx: ToolContext[Any], raw_arguments: str) -> Any:
        try:
            parsed = json.loads(raw_arguments or "{}")
        except ValueError:
            return f"Error: the arguments of {name} are not valid JSON"
        if not isinstance(parsed, dict):
            return f"Error: the arguments of {name} must be a JSON object"
        arguments = {k: v for k, v in parsed.items() if not (v is None and k in optional)}
        outcome = await toolset.acall(
            name, arguments, tool_call_id=ctx.tool_call_id, model=_model_name(ctx)
        )
        outcomes[ctx.tool_call_id] = outcome
        return _render(outcome)

    def host_record(context: FunctionToolCustomDataContext) -> dict[str, Any] | None:
        outcome = outcomes.pop(context.tool_context.tool_call_id, None)
        return None if outcome is None else dict(artifact(outcome))

    return FunctionTool(
        name=name,
        description=spec.description,
        params_json_schema=strict_schema(spec),
        on_invoke_tool=invoke,
        strict_json_schema=True,
        custom_data_extractor=host_record,
    )


def _model_name(ctx: ToolContext[Any]) -> str | None:
    """The model the SDK gives the tool's agent: ``Agent.model`` as a name, or a model object's ``model``."""
    model = getattr(getattr(ctx, "agent", None), "model", None)
    if isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def strict_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` (a JSON Schema object) made fit for OpenAI's strict function schemas.

    The same as :func:`docbinder.toolset.specs.make_strict`: every property
    required, optional ones nullable, defaults dropped, an untyped property a
    string or a list of strings. The SDK then closes every object
    (``additionalProperties: false``) and checks the result.
    """
    return make_strict(parameters)


def _optional_names(parameters: Mapping[str, Any]) -> frozenset[str]:
    properties = parameters.get("properties") or {}
    return frozenset(properties) - frozenset(parameters.get("required", ()))


def _render(outcome: ToolOutcome) -> Any:
    """The output the SDK sends to the model for ``outcome``."""
    if outcome.is_error:
        return outcome.text
    extra: list[Any] = [
        ToolOutputImage(image_url=data_url(part), detail="auto") for part in image_parts(outcome)
    ]
    extra.extend(
        ToolOutputFileContent(file_data=data_url(part), filename=part.file_name)
        for part in outcome.parts
        if part.kind is ContentKind.BINARY
        and part.data is not None
        and part.mime_type in _FILE_MIME_TYPES
    )
    if not extra:
        return outcome.text
    return [ToolOutputText(text=outcome.text), *extra]


def file_tool_output(ref: ProviderFileRef) -> ToolOutputFileContent | ToolOutputImage:
    """A file ``run.provide_file`` handed to OpenAI, as the Agents SDK's own tool output (B22).

    A function tool returns it (alone or in a list); the SDK sends it to the
    model as ``input_image`` (images, ``detail="auto"``) or ``input_file`` with
    the ``file_id``, so the bytes are not sent again. Raises :class:`InvalidInput`
    for another provider's copy (OpenAI cannot read those ids).
    """
    if ref.provider is not Provider.OPENAI:
        raise InvalidInput(
            f"the OpenAI Agents SDK sends OpenAI file ids only; this copy is at {ref.provider.value}"
        )
    if ref.mime_type.split(";", 1)[0].strip().lower() in _IMAGE_TYPES:
        return ToolOutputImage(file_id=ref.file_id, detail="auto")
    return ToolOutputFileContent(file_id=ref.file_id, filename=ref.file_name)


_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""What the Responses API reads as an image (its ``input_image`` types)."""
