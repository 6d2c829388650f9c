"""docbinder's agent tools as LangChain tools, for LangChain and LangGraph agents (ADR 0017).

::

    from docbinder.integrations.langchain import docbinder_tools

    tools = docbinder_tools(run)              # run = binder.start_new_run(principal)
    graph.add_node("tools", ToolNode(tools))  # langgraph.prebuilt.ToolNode
    model = chat_model.bind_tools(tools)

Each tool is a :class:`langchain_core.tools.StructuredTool` rendered from
:class:`docbinder.toolset.DocbinderToolset`: the same name, description and
JSON Schema (as ``args_schema``) as every other rendering. Tools run
synchronously under ``invoke`` and asynchronously under ``ainvoke`` (LangGraph's
``ToolNode`` in an async graph), without blocking the event loop.

* Producing tools (``write_file``, ``download_from_data_source``,
  ``render_document``, ``create_chart``, ``generate_image``) use
  ``response_format="content_and_artifact"``: the ``ToolMessage`` content is the
  unified tool-result text, its ``artifact`` is
  ``{"file_ids": [...], "document_ids": [...]}``.
* ``read_documents`` returns standard content blocks: one text block, then one
  ``{"type": "image", "base64": ..., "mime_type": ...}`` block per image, so a
  vision model sees the images; the other consuming tools return text.
* A failed call is a ``ToolMessage`` with ``status="error"`` and docbinder's
  one-line message (the tool raises :class:`~langchain_core.tools.ToolException`,
  which the tools handle), so the model can correct itself.
* Arguments go through the tool set's coercion (a Chart.js spec for
  ``create_chart``, a dict for a ``.json`` file, rows for ``.csv``, a ``data:``
  URI for a PNG, ``"pdf, html"``), the same as over MCP. The default schemas
  accept those objects, so ``write_file``, ``create_chart`` and
  ``read_documents`` are not strict; ``docbinder_tools(run, strict=True)``
  offers strict-mode schemas instead (objects as JSON text, ADR 0023), for
  ``chat_model.bind_tools(tools, strict=True)``.

Needs the ``[langchain]`` extra (``langchain-core``, plus ``langgraph`` for
agent graphs); without it importing this module raises
:class:`~docbinder.domain.errors.MissingExtra`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from docbinder.domain.errors import MissingExtra
from docbinder.integrations._rendering import (
    artifact,
    base64_data,
    image_parts,
    toolset_for,
)
from docbinder.toolset.specs import strict_schema

try:
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from pydantic import BaseModel, ConfigDict, create_model
except ModuleNotFoundError as exc:  # tested by simulating the missing package
    raise MissingExtra("docbinder's LangChain tools", "langchain", "langchain-core") from exc

if TYPE_CHECKING:
    from docbinder.application.binder import Run
    from docbinder.tools.datasources import DataSource
    from docbinder.tools.images import ImageGenerator
    from docbinder.toolset import DocbinderToolset, ToolOutcome, ToolSpec

__all__ = ["DocbinderTool", "docbinder_tools", "render_tool"]


class SharedSchemaInput(BaseModel):
    """Base of each tool's input model: the argument names, and the shared JSON Schema.

    Arguments are checked by the tool set (types, enums, nulls); this model
    checks that no unknown argument is given and reports the shared schema as
    its JSON Schema.
    """

    model_config = ConfigDict(extra="forbid")
    shared_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The tool set's JSON Schema of the arguments, unchanged."""
        return copy.deepcopy(cls.shared_schema)


_CALL_ID = "__docbinder_tool_call_id"
"""The keyword under which :class:`DocbinderTool` passes LangChain's tool call id to its function."""


class DocbinderTool(StructuredTool):
    """A :class:`StructuredTool` whose ``args_schema`` is the tool set's JSON Schema.

    The model is offered that schema as is (``tool_call_schema``);
    :meth:`get_input_schema` gives a pydantic model with the same argument
    names for LangChain's introspection.
    """

    input_model: type[BaseModel]

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """A pydantic model with one field per argument (required as in the schema)."""
        return self.input_model

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """LangChain's arguments, plus the id of the model's tool call LangChain was given (B9).

        ``BaseTool.run`` hands the id of the ``ToolCall`` it was invoked with
        to this hook; it reaches the tool set as the call's ``tool_call_id``.
        """
        args, kwargs = super()._to_args_and_kwargs(tool_input, tool_call_id)
        return args, {**kwargs, _CALL_ID: tool_call_id}


def _input_model(name: str, parameters: Mapping[str, Any]) -> type[BaseModel]:
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    fields: dict[str, Any] = {
        key: (Any, ...) if key in required else (Any, None) for key in properties
    }
    model: type[SharedSchemaInput] = create_model(
        f"{name}_input", __base__=SharedSchemaInput, **fields
    )
    model.shared_schema = dict(parameters)
    return model


def docbinder_tools(
    run: Run | DocbinderToolset,
    *,
    data_sources: Mapping[str, DataSource] | None = None,
    image_generator: ImageGenerator | None = None,
    strict: bool = False,
) -> list[BaseTool]:
    """One LangChain tool per tool of the docbinder tool set, in its order.

    ``run`` is the agent run (:meth:`DocBinder.start_new_run` or
    :meth:`DocBinder.start_run`), or a ready
    :class:`~docbinder.toolset.DocbinderToolset` to share with other renderings;
    ``data_sources`` (service name -> :class:`~docbinder.tools.DataSource`) and
    ``image_generator`` configure a new tool set. Raises ``TypeError`` when they
    come with a ready tool set. With ``strict`` each tool's schema is the
    strict-mode one (:func:`docbinder.toolset.specs.strict_schema`), for
    ``bind_tools(..., strict=True)``.
    """
    toolset = toolset_for(run, data_sources=data_sources, image_generator=image_generator)
    return [render_tool(toolset, spec, strict=strict) for spec in toolset.specs]


def render_tool(
    toolset: DocbinderToolset, spec: ToolSpec, *, strict: bool = False
) -> DocbinderTool:
    """The LangChain tool for ``spec`` of ``toolset`` (see the module docstring).

    ``strict`` offers the strict-mode schema instead of the shared one.
    """
    name = spec.name
    parameters = strict_schema(spec) if strict else dict(spec.parameters)
    producing = spec.produces_files

    def run_sync(**arguments: Any) -> Any:
        call_id = arguments.pop(_CALL_ID, None)
        return _render(toolset.call(name, arguments, tool_call_id=call_id), producing=producing)

    async def run_async(**arguments: Any) -> Any:
        call_id = arguments.pop(_CALL_ID, None)
        outcome = await toolset.acall(name, arguments, tool_call_id=call_id)
        return _render(outcome, producing=producing)

    return DocbinderTool(
        input_model=_input_model(spec.name, parameters),
        name=name,
        description=spec.description,
        args_schema=parameters,
        func=run_sync,
        coroutine=run_async,
        response_format="content_and_artifact" if producing else "content",
        handle_tool_error=True,
        metadata={"docbinder": True, "read_only": spec.read_only},
    )


def _render(outcome: ToolOutcome, *, producing: bool) -> Any:
    """The tool's return value for LangChain: content, or (content, artifact)."""
    if outcome.is_error:
        raise ToolException(outcome.text)
    content: str | list[str | dict[str, Any]] = outcome.text
    images = image_parts(outcome)
    if images:
        content = [{"type": "text", "text": outcome.text}]
        content.extend(
            {"type": "image", "base64": base64_data(p), "mime_type": p.mime_type} for p in images
        )
    if producing:
        return content, artifact(outcome)
    return content
