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
from collections.abc import Iterable, Sequence
from typing import Literal

from docbinder.application.binder import Run
from docbinder.domain.access import Action
from docbinder.domain.errors import FileItemNotFound, InvalidInput
from docbinder.domain.model import check_file_name
from docbinder.tools.charts import parse_chart_spec, render_chart_png
from docbinder.tools.datasources import DataSource
from docbinder.tools.errors import ImageGenerationError
from docbinder.tools.images import ImageGenerator, check_image_request
from docbinder.tools.render import document_title, markdown_to_html, markdown_to_pdf
from docbinder.tools.results import ToolResult, check_name, produce_all

log = logging.getLogger(__name__)

DOCUMENT_FORMATS = ("html", "pdf")
"""Formats ``render_document`` can produce."""

_DOCUMENT_EXTENSIONS = (".md", ".markdown", ".txt", ".html", ".htm", ".pdf")
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


def _content_bytes(content: object) -> bytes:
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, bytes | bytearray | memoryview):
        return bytes(content)
    raise InvalidInput("the file content must be text or bytes")


def write_file(
    run: Run,
    name: str,
    content: str | bytes,
    *,
    mode: Literal["create", "append"] = "create",
    file_id: str | None = None,
) -> ToolResult:
    """Write a file (``mode="create"``) or append to one the caller may update (``"append"``).

    Text is stored as UTF-8. ``create`` bridges a new file: label
    ``writeFile:<name>``, verb ``Wrote``. ``append`` adds ``content`` to the
    end of the FileItem ``file_id`` (or, without an id, of the newest file
    named ``name`` that the caller may update), keeping its id and creating no
    message; the text is::

        Appended 12 bytes to 'notes.md' (40 bytes)
          file id: <fileId>

    The appended file gets a new blob, size and SHA-256 in one transaction
    (:class:`~docbinder.tools.rewrite.UpdateFileContent`). Errors:
    :class:`InvalidInput` (bad mode, name or content),
    :class:`FileItemNotFound`, :class:`AccessDenied` (no ``update`` right),
    :class:`Conflict`, :class:`SizeLimitExceeded`, :class:`StorageError`.
    """
    data = _content_bytes(content)
    if mode == "create":
        check_file_name(name)
        result = run.produce_file(name, data, verb="Wrote", label=f"writeFile:{name}")
        return ToolResult(result.text, (result,))
    if mode != "append":
        raise InvalidInput(f"mode must be 'create' or 'append', got {mode!r}")
    updater = run.binder.update_file
    target = file_id if file_id is not None else _newest_updatable(run, name)
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


def _formats(formats: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(formats, str):
        formats = (formats,)
    chosen: list[str] = []
    for value in formats:
        fmt = value.strip().lower().lstrip(".") if isinstance(value, str) else ""
        if fmt not in DOCUMENT_FORMATS:
            raise InvalidInput(
                f"unknown document format {value!r}; supported: {', '.join(DOCUMENT_FORMATS)}"
            )
        if fmt not in chosen:
            chosen.append(fmt)
    if not chosen:
        raise InvalidInput("at least one document format is needed")
    return tuple(chosen)


def render_document(
    run: Run,
    markdown: str,
    *,
    name: str,
    formats: Sequence[str] | str = ("html",),
    title: str | None = None,
) -> ToolResult:
    """Render Markdown to ``<name>.html`` and/or ``<name>.pdf`` and bridge each file.

    ``name`` is the base name (a trailing ``.md``/``.html``/``.pdf`` is
    dropped); ``title`` defaults to the first heading, else the base name.
    HTML is a complete document with ``<title>``; PDF is text-only A4 (see
    :mod:`docbinder.tools.render`). Every format is rendered before anything
    is stored; then one message per file, label ``renderDocument:<file
    name>``, verb ``Rendered``. Errors: :class:`InvalidInput`,
    :class:`MissingExtra`, storing errors.
    """
    base = check_name(name, "document name")
    for extension in _DOCUMENT_EXTENSIONS:
        if base.lower().endswith(extension) and len(base) > len(extension):
            base = base[: -len(extension)]
            break
    base = _safe_stem(base)
    chosen = _formats(formats)
    doc_title = title.strip() if isinstance(title, str) and title.strip() else None
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
    ``Generated``. Arguments are checked before the generator is called; when
    the generator fails (:class:`ImageGenerationError`) nothing is stored.
    """
    prompt, n, size = check_image_request(prompt, n, size)
    stem = _safe_stem(check_name(name, "image name"))
    images = generator.generate(prompt, n=n, size=size)
    if not images:
        raise ImageGenerationError("the image generator returned no images")
    outputs = [
        (f"{stem}-{index}.{image.extension}", image.data, image.mime_type)
        for index, image in enumerate(images, start=1)
    ]
    return produce_all(run, outputs, verb="Generated", label=lambda _file: f"generateImage:{stem}")


def create_chart(run: Run, spec: dict[str, object] | str, *, name: str | None = None) -> ToolResult:
    """Validate a chart spec, draw it as PNG and bridge it as ``<title or name>.png``.

    ``spec`` is a dict or JSON text (see :mod:`docbinder.tools.charts` for the
    shape and the rules; a bad spec raises :class:`InvalidInput` with a message
    starting ``chart spec:``). ``name`` wins over the spec's title for the file
    name and the label ``createChart:<name>``; without either the chart is
    called ``chart``. Verb ``Created chart``.
    """
    chart = parse_chart_spec(spec)
    display = name.strip() if isinstance(name, str) and name.strip() else chart.title or "chart"
    png = render_chart_png(chart)
    file_name = f"{_safe_stem(display)}.png"
    result = run.produce_file(
        file_name, png, verb="Created chart", label=f"createChart:{display}", mime_type="image/png"
    )
    return ToolResult(result.text, (result,))
