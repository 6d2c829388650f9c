"""File-producing agent tools (SPEC C10), each a thin call of the bridge.

Every tool takes the agent :class:`~docbinder.application.binder.Run` first,
stores what it produced with :meth:`Run.produce_file` (store -> duplicate check
-> attach, which never raises -> unified text) and returns a
:class:`~docbinder.tools.results.ToolResult`. Label conventions (the
``documents_label`` of the message that carries the file, made unique by the
bridge when taken):

=============================  ==============================  ================
tool                           label                           verb
=============================  ==============================  ================
``download_from_data_source``  ``datasource:<service>``        ``Downloaded``
``write_file`` (create)        ``writeFile:<name>``            ``Wrote``
``write_file`` (append)        no message: the file changes    ``Appended``
``render_document``            ``renderDocument:<file name>``  ``Rendered``
``generate_image``             ``generateImage:<name>``        ``Generated``
``create_chart``               ``createChart:<title or name>`` ``Created chart``
=============================  ==============================  ================

Bad arguments raise :class:`~docbinder.domain.errors.InvalidInput` before
anything is stored; failures of a data source or image service raise the
errors of :mod:`docbinder.tools.errors`, and nothing is stored then either.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from docbinder.application.binder import Run
from docbinder.domain.access import Action
from docbinder.domain.errors import FileItemNotFound
from docbinder.domain.model import check_file_name
from docbinder.tools.arguments import (
    DELIMITED_EXTENSIONS,
    JSON_LINES_EXTENSIONS,
    checked_text_bytes,
    coerce_choice,
    coerce_choices,
    coerce_file_content,
    coerce_file_name,
    coerce_int,
    coerce_text,
    encode_text,
    fence_language,
    refusal,
    split_extension,
    strip_fence,
)
from docbinder.tools.charts import parse_chart_spec, render_chart_png
from docbinder.tools.datasources import DataSource
from docbinder.tools.errors import ImageGenerationError
from docbinder.tools.images import MAX_IMAGES, ImageGenerator, check_image_request
from docbinder.tools.render import document_title, markdown_to_html, markdown_to_pdf
from docbinder.tools.results import ToolResult, check_name, produce_all

log = logging.getLogger(__name__)

DOCUMENT_FORMATS = ("html", "pdf")
"""Formats ``render_document`` can produce."""

_DOCUMENT_EXTENSIONS = (".md", ".markdown", ".txt", ".html", ".htm", ".pdf")
_SIZE_RE = re.compile(r"^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$")
_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg")
_MAX_STEM = 200


def _safe_stem(value: str) -> str:
    """``value`` usable as the stem of a file name: no path separators, at most 200 characters."""
    stem = value.replace("/", "-").replace("\\", "-").strip()
    stem = "".join(ch for ch in stem if ord(ch) >= 32 and ch != "\x7f")
    return stem[:_MAX_STEM].strip() or "file"


def download_from_data_source(
    run: Run, source: DataSource, path_or_url: str, *, service: str
) -> ToolResult:
    """Fetch ``path_or_url`` from ``source`` and bridge it as one file.

    Label ``datasource:<service>``, verb ``Downloaded``; the file name and
    claimed MIME type come from the source (the bytes decide the stored MIME
    type where they are conclusive). The bytes stream from the source into the
    blob store. Errors: :class:`InvalidInput`, :class:`DataSourceNotFound`,
    :class:`DataSourceError`, :class:`SizeLimitExceeded` (source or binder
    limit; nothing stored), :class:`AccessDenied`, :class:`StorageError`.
    """
    service = check_name(service, "service name")
    with source.fetch(path_or_url) as download:
        result = run.produce_file(
            download.name,
            download.chunks,
            verb="Downloaded",
            label=f"datasource:{service}",
            mime_type=download.mime_type,
        )
    return ToolResult(result.text, (result,))


def _append_bytes(name: str, content: object) -> bytes:
    """Bytes to append to ``name``: text or bytes as given, rows for CSV/TSV, values for JSON Lines.

    Text or bytes for a text name must be UTF-8 without NUL, and each line
    for JSON Lines must be JSON (:func:`~docbinder.tools.arguments.checked_text_bytes`).
    """
    _stem, extension = split_extension(name)
    if isinstance(content, str | bytes | bytearray | memoryview):
        data = (
            encode_text(content, f"the content to append to {name!r}")
            if isinstance(content, str)
            else bytes(content)
        )
        return checked_text_bytes(name, data, whole=False)
    if isinstance(content, list | tuple) and (
        extension in JSON_LINES_EXTENSIONS
        or (extension in DELIMITED_EXTENSIONS and all(isinstance(r, list | tuple) for r in content))
    ):
        return coerce_file_content(name, content).data
    raise refusal(
        f"the content to append to {name!r}",
        content,
        "text or bytes; a list of rows (lists of cells) for .csv/.tsv; a list of values for .jsonl",
        '"more text\\n" or [["North", 61]] for a .csv file',
    )


def write_file(
    run: Run,
    name: str,
    content: object,
    *,
    mode: str = "create",
    file_id: str | None = None,
) -> ToolResult:
    """Write a file (``mode="create"``) or append to one the caller may update (``"append"``).

    Arguments are read tolerantly (:mod:`docbinder.tools.arguments`): ``name``
    loses a directory part and a repeated extension (``out/data.json.json`` ->
    ``data.json``); ``content`` may be text, bytes, a dict or list for
    ``.json``, rows for ``.csv``/``.tsv``, a ``data:`` URI or base64 for a
    binary type (decoded, its bytes checked against the name's type), see
    :func:`~docbinder.tools.arguments.coerce_file_content`; ``mode`` is
    case-insensitive. Text is stored as UTF-8.

    ``create`` bridges a new file: label ``writeFile:<name>``, verb ``Wrote``.
    ``append`` adds ``content`` (text, bytes, rows for CSV/TSV, values for
    JSON Lines) to the end of the FileItem ``file_id`` (or, without an id, of
    the newest file named ``name`` that the caller may update), keeping its id
    and creating no message; the text is::

        Appended 12 bytes to 'notes.md' (40 bytes)
          file id: <fileId>

    The appended file gets a new blob, size and SHA-256 in one transaction
    (:class:`~docbinder.application.use_cases.append_file_content.AppendFileContent`). Errors:
    :class:`InvalidInput` (bad mode, name or content; the message says what
    was received, what is accepted and gives an example),
    :class:`FileItemNotFound`, :class:`AccessDenied` (no ``update`` right),
    :class:`Conflict`, :class:`SizeLimitExceeded`, :class:`StorageError`.
    """
    name = coerce_file_name(name, example="notes.md")
    mode = coerce_choice(mode, "the write mode", ("create", "append"))
    if mode == "create":
        check_file_name(name)
        written = coerce_file_content(name, content)
        check_file_name(written.name)
        result = run.produce_file(
            written.name,
            written.data,
            verb="Wrote",
            label=f"writeFile:{written.name}",
            mime_type=written.mime_type,
        )
        return ToolResult(result.text, (result,))
    data = _append_bytes(name, content)
    updater = run.binder.update_file
    target = (
        coerce_text(file_id, "the file id", example='"3f2c9a4e-..."')
        if file_id is not None
        else _newest_updatable(run, name)
    )
    update = updater.append(run.principal, target, data)
    item = update.item
    text = (
        f"Appended {len(data)} bytes to '{item.file_name}' ({item.size} bytes)\n"
        f"  file id: {item.id}"
    )
    return ToolResult(text, (), (item,))


def _newest_updatable(run: Run, name: str) -> str:
    check_file_name(name)
    for item in run.list_files():
        if item.file_name == name and run.binder.access.can_on_file(
            run.principal, Action.UPDATE, item
        ):
            return item.id
    raise FileItemNotFound(
        f"no file named {name!r} that you may change; create it first or pass its file id"
    )


def _markdown_argument(markdown: object) -> str:
    """``markdown`` without a ``markdown``/``md``/unnamed code fence around all of it."""
    if isinstance(markdown, str) and fence_language(markdown) in ("", "md", "markdown"):
        return strip_fence(markdown) + "\n"
    if not isinstance(markdown, str):
        raise refusal("the Markdown text", markdown, "Markdown as text", '"# Title\\n\\nText"')
    return markdown


def render_document(
    run: Run,
    markdown: str,
    *,
    name: str,
    formats: Sequence[str] | str = ("html",),
    title: str | None = None,
) -> ToolResult:
    """Render Markdown to ``<name>.html`` and/or ``<name>.pdf`` and bridge each file.

    ``name`` is the base name (a directory part and a trailing
    ``.md``/``.html``/``.pdf`` are dropped); ``formats`` a list or a
    comma/space-separated string (``"pdf, html"``); a code fence around all of
    ``markdown`` (unnamed or ``markdown``) is removed; ``title`` defaults to
    the first heading, else the base name.
    HTML is a complete document with ``<title>``; PDF is text-only A4 (see
    :mod:`docbinder.tools.render`). Every format is rendered before anything
    is stored; then one message per file, label ``renderDocument:<file
    name>``, verb ``Rendered``. Errors: :class:`InvalidInput`,
    :class:`MissingExtra`, storing errors.
    """
    markdown = _markdown_argument(markdown)
    base = coerce_file_name(name, "the document name", example='"report"')
    for extension in _DOCUMENT_EXTENSIONS:
        if base.lower().endswith(extension) and len(base) > len(extension):
            base = base[: -len(extension)]
            break
    base = _safe_stem(base)
    chosen = coerce_choices(
        formats, "the document formats", DOCUMENT_FORMATS, example='"pdf, html"'
    )
    doc_title = strip_fence(title) if isinstance(title, str) and strip_fence(title) else None
    doc_title = doc_title or document_title(markdown, base)
    outputs: list[tuple[str, bytes, str | None]] = []
    for fmt in chosen:
        if fmt == "html":
            html = markdown_to_html(markdown, title=doc_title)
            outputs.append((f"{base}.html", html.encode("utf-8"), "text/html"))
        else:
            outputs.append(
                (f"{base}.pdf", markdown_to_pdf(markdown, title=doc_title), "application/pdf")
            )
    return produce_all(
        run, outputs, verb="Rendered", label=lambda file_name: f"renderDocument:{file_name}"
    )


def generate_image(
    run: Run,
    prompt: str,
    *,
    generator: ImageGenerator,
    n: int = 1,
    size: str = "512x512",
    name: str = "image",
) -> ToolResult:
    """Generate ``n`` images from ``prompt`` and bridge each as ``<name>-<i>.png``.

    ``i`` counts from 1; the extension follows the image type (``png`` for
    PNG). One message per image, label ``generateImage:<name>``, verb
    ``Generated``. ``n`` may be a numeric string (``"2"``), ``size`` any case
    with spaces (``"1024 X 1024"``), ``name`` loses a directory part and an
    image extension. Arguments are checked before the generator is called; when
    the generator fails (:class:`ImageGenerationError`) nothing is stored.
    """
    prompt = coerce_text(prompt, "the image prompt", example='"a red bicycle at dawn"')
    n = coerce_int(n, "the number of images", minimum=1, maximum=MAX_IMAGES)
    if isinstance(size, str):
        size = re.sub(r"\s+", "", strip_fence(size).lower()).replace("×", "x").replace("*", "x")
    if not isinstance(size, str) or not (size == "auto" or _SIZE_RE.match(size)):
        raise refusal(
            "the image size", size, "'<width>x<height>' in pixels or 'auto'", '"1024x1024"'
        )
    prompt, n, size = check_image_request(prompt, n, size)
    stem = _safe_stem(_drop_extension(coerce_file_name(name, "the image name", example='"logo"')))
    images = generator.generate(prompt, n=n, size=size)
    if not images:
        raise ImageGenerationError("the image generator returned no images")
    outputs = [
        (f"{stem}-{index}.{image.extension}", image.data, image.mime_type)
        for index, image in enumerate(images, start=1)
    ]
    return produce_all(run, outputs, verb="Generated", label=lambda _file: f"generateImage:{stem}")


def _drop_extension(name: str) -> str:
    stem, extension = split_extension(name)
    return stem if extension in _IMAGE_EXTENSIONS else name


def create_chart(run: Run, spec: object, *, name: str | None = None) -> ToolResult:
    """Validate a chart spec, draw it as PNG and bridge it as ``<title or name>.png``.

    ``spec`` is a dict, a list of rows or JSON text in docbinder's shape or a
    dialect models write (Chart.js, Vega-Lite, Plotly, a plain table; see
    :mod:`docbinder.tools.charts` and :mod:`docbinder.tools.chart_dialects`;
    a bad spec raises :class:`InvalidInput` with a message starting ``chart
    spec``). ``name`` (a directory part and an image extension are dropped)
    wins over the spec's title for the file
    name and the label ``createChart:<name>``; without either the chart is
    called ``chart``. Verb ``Created chart``.
    """
    chart = parse_chart_spec(spec)
    given = (
        _drop_extension(coerce_file_name(name, "the chart name", example='"revenue"'))
        if name is not None and not (isinstance(name, str) and not name.strip())
        else None
    )
    display = given or chart.title or "chart"
    png = render_chart_png(chart)
    file_name = f"{_safe_stem(display)}.png"
    result = run.produce_file(
        file_name, png, verb="Created chart", label=f"createChart:{display}", mime_type="image/png"
    )
    return ToolResult(result.text, (result,))
