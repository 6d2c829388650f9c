"""Agent tools: reference call sites of the bridge (SPEC C9, C10).

Producing tools store what they make and bridge it into the run's workflow with
their label convention, returning a :class:`ToolResult` whose ``text`` is what
the model sees (SPEC C5):

* :func:`download_from_data_source` (``datasource:<service>``) over a
  :class:`DataSource`: :class:`LocalDirectorySource`, :class:`HttpSource`,
  :class:`S3Source`;
* :func:`write_file` (``writeFile:<name>``; append mode changes a file in place);
* :func:`render_document` (``renderDocument:<file name>``, HTML and PDF);
* :func:`generate_image` (``generateImage:<name>``) over an :class:`ImageGenerator`
  such as :class:`OpenAICompatibleImageGenerator`;
* :func:`create_chart` (``createChart:<title or name>``).

The producing tools read model-filled arguments tolerantly
(:mod:`docbinder.tools.arguments`; chart dialects in
:mod:`docbinder.tools.chart_dialects`) and refuse what they cannot use with what
was received, what is accepted and an example; ``ACCEPTED_SHAPES`` describes the
accepted shapes per tool argument for tool schemas.

Consuming tools work by file id, access-checked, and create no message:
:func:`read_file`, :func:`replace_in_file`, :func:`search_in_file_content`,
:func:`list_files`, :func:`get_file_info`.

:func:`persist_task_result` stores several files as one message (``docList:<label>``);
:func:`bridged_tool` and :func:`bridge` turn a host's own function into a bridged tool.

The tools need the ``[tools]`` extra (httpx, matplotlib, markdown-it-py); the S3
data source needs ``[s3]``. Every tool takes the agent run
(:class:`docbinder.application.binder.Run`) as its first argument.
"""

from docbinder.application.steps.content_switch import FileUpdate
from docbinder.application.use_cases.append_file_content import AppendFileContent
from docbinder.application.use_cases.replace_file_content import ReplaceFileContent
from docbinder.tools.arguments import ACCEPTED_SHAPES
from docbinder.tools.bridge import bridge, bridged_tool
from docbinder.tools.charts import ChartSpec, Series, parse_chart_spec, render_chart_png
from docbinder.tools.consuming import (
    ReplaceResult,
    SearchMatch,
    get_file_info,
    list_files,
    read_file,
    replace_in_file,
    search_in_file_content,
)
from docbinder.tools.datasources import (
    DataSource,
    Download,
    HttpSource,
    LocalDirectorySource,
    S3Source,
)
from docbinder.tools.errors import (
    DataSourceError,
    DataSourceNotFound,
    ExternalServiceError,
    ImageGenerationError,
)
from docbinder.tools.images import GeneratedImage, ImageGenerator, OpenAICompatibleImageGenerator
from docbinder.tools.producing import (
    create_chart,
    download_from_data_source,
    generate_image,
    render_document,
    write_file,
)
from docbinder.tools.results import ToolResult
from docbinder.tools.taskresult import TaskResult, persist_task_result

__all__ = [
    "ACCEPTED_SHAPES",
    "AppendFileContent",
    "ChartSpec",
    "DataSource",
    "DataSourceError",
    "DataSourceNotFound",
    "Download",
    "ExternalServiceError",
    "FileUpdate",
    "GeneratedImage",
    "HttpSource",
    "ImageGenerationError",
    "ImageGenerator",
    "LocalDirectorySource",
    "OpenAICompatibleImageGenerator",
    "ReplaceFileContent",
    "ReplaceResult",
    "S3Source",
    "SearchMatch",
    "Series",
    "TaskResult",
    "ToolResult",
    "bridge",
    "bridged_tool",
    "create_chart",
    "download_from_data_source",
    "generate_image",
    "get_file_info",
    "list_files",
    "parse_chart_spec",
    "persist_task_result",
    "read_file",
    "render_chart_png",
    "render_document",
    "replace_in_file",
    "search_in_file_content",
    "write_file",
]
