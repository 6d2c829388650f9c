"""Markdown to HTML and PDF for ``render_document`` (SPEC C10).

HTML: CommonMark (https://spec.commonmark.org/) plus GitHub-style tables and
strikethrough, rendered with markdown-it-py into a complete HTML5 document
with a ``<title>``. Raw HTML inside the Markdown is escaped, not passed through,
and markdown-it-py's link validation drops ``javascript:`` and similar URLs, so a
rendered document carries no script.

PDF: text-only A4 pages drawn with matplotlib's PDF backend (``Figure``
objects, no pyplot, no global state): headings, paragraphs, list items, table
rows, quotes and code blocks as wrapped lines of text. Inline formatting is
dropped; images show their alt text. The text is real PDF text, so the content
extractor reads it back.

Both need the ``[tools]`` extra (markdown-it-py, matplotlib); without it
:class:`~docbinder.domain.errors.MissingExtra` is raised.
"""

from __future__ import annotations

import html
import io
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any, Final

import attrs

from docbinder.domain.errors import InvalidInput, MissingExtra

MAX_MARKDOWN_CHARS: Final = 2_000_000
"""Longest Markdown source accepted, in characters."""

A4_INCHES: Final = (8.27, 11.69)
"""PDF page size (ISO 216 A4) in inches."""

_MARGIN_PT: Final = 54.0
_INDENT_PT: Final = 18.0
_STYLES: Final[dict[str, tuple[float, str, str, float]]] = {
    # style -> (font size pt, weight, family, space before pt)
    "h1": (18.0, "bold", "sans-serif", 10.0),
    "h2": (15.0, "bold", "sans-serif", 9.0),
    "h3": (12.5, "bold", "sans-serif", 8.0),
    "body": (10.5, "normal", "sans-serif", 5.0),
    "code": (9.0, "normal", "monospace", 5.0),
    "rule": (10.5, "normal", "sans-serif", 6.0),
}
_CHAR_WIDTH_EM: Final = {  # average advance of DejaVu glyphs, generous so lines stay inside
    ("sans-serif", "normal"): 0.6,
    ("sans-serif", "bold"): 0.7,
    ("monospace", "normal"): 0.61,
}

_CSS: Final = (
    "body{font-family:system-ui,sans-serif;line-height:1.5;max-width:48rem;"
    "margin:2rem auto;padding:0 1rem;color:#1a1a1a}"
    "pre{background:#f4f4f4;padding:.75rem;overflow-x:auto}"
    "code{font-family:ui-monospace,monospace}"
    "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.25rem .5rem}"
    "blockquote{border-left:4px solid #ccc;margin-left:0;padding-left:1rem;color:#555}"
)


def _markdown_it() -> Any:
    try:
        from markdown_it import MarkdownIt
    except ImportError as exc:
        raise MissingExtra("Markdown rendering", "tools", "markdown-it-py") from exc
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def check_markdown(markdown: object) -> str:
    """Return ``markdown`` if it is a string of at most :data:`MAX_MARKDOWN_CHARS`, else :class:`InvalidInput`."""
    if not isinstance(markdown, str):
        raise InvalidInput("the document must be Markdown text (a string)")
    if len(markdown) > MAX_MARKDOWN_CHARS:
        raise InvalidInput(f"the document is longer than {MAX_MARKDOWN_CHARS} characters")
    return markdown


def _inline_text(token: Any) -> str:
    pieces: list[str] = []
    for child in token.children or ():
        if child.type in ("text", "code_inline", "html_inline", "image"):
            pieces.append(child.content)
        elif child.type == "softbreak":
            pieces.append(" ")
        elif child.type == "hardbreak":
            pieces.append("\n")
    return "".join(pieces)


def document_title(markdown: str, fallback: str) -> str:
    """The plain text of the first heading of ``markdown``, else ``fallback``."""
    tokens = _markdown_it().parse(check_markdown(markdown))
    for index, token in enumerate(tokens[:-1]):
        if token.type == "heading_open":
            text = _inline_text(tokens[index + 1]).strip()
            if text:
                return text
    return fallback


def markdown_to_html(markdown: str, *, title: str) -> str:
    """A complete HTML5 document (UTF-8) for ``markdown`` with ``<title>`` ``title``.

    Shape::

        <!DOCTYPE html>
        <html>
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{title}</title>
        <style>...</style>
        </head>
        <body>
        {rendered Markdown}
        </body>
        </html>
    """
    body = _markdown_it().render(check_markdown(markdown))
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{_CSS}</style>\n"
        "</head>\n<body>\n"
        f"{body}"
        "</body>\n</html>\n"
    )


@attrs.frozen
class Block:
    """One block of a document's plain-text layout.

    ``style`` is ``h1``, ``h2``, ``h3``, ``body``, ``code`` or ``rule``;
    ``indent`` counts nesting levels (lists, quotes).
    """

    style: str
    text: str = ""
    indent: int = 0


def markdown_blocks(markdown: str) -> list[Block]:
    """The blocks of ``markdown`` in reading order, with inline formatting dropped.

    List items get ``•`` or ``<n>.`` in front, table rows become cells joined
    by `` | ``, headings below level 3 use the ``h3`` style.
    """
    tokens = _markdown_it().parse(check_markdown(markdown))
    blocks: list[Block] = []
    lists: list[list[Any]] = []  # [kind, next number]
    quotes = 0
    prefix = ""
    row: list[str] | None = None
    heading: str | None = None
    for token in tokens:
        depth = max(0, len(lists) - 1) + quotes
        kind = token.type
        if kind == "bullet_list_open":
            lists.append(["bullet", 0])
        elif kind == "ordered_list_open":
            start = token.attrGet("start")
            lists.append(["ordered", int(start) if start is not None else 1])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            if lists and lists[-1][0] == "ordered":
                prefix = f"{token.info or lists[-1][1]}. "
                lists[-1][1] += 1
            else:
                prefix = "• "
        elif kind == "heading_open":
            heading = token.tag
        elif kind == "heading_close":
            heading = None
        elif kind == "blockquote_open":
            quotes += 1
        elif kind == "blockquote_close":
            quotes -= 1
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None:
            blocks.append(Block("body", " | ".join(row), depth))
            row = None
        elif kind in ("fence", "code_block"):
            blocks.append(Block("code", token.content.rstrip("\n"), depth))
        elif kind == "hr":
            blocks.append(Block("rule", "", depth))
        elif kind == "inline":
            text = _inline_text(token)
            if heading is not None:
                level = min(3, int(heading[1:]) if heading[1:].isdigit() else 1)
                blocks.append(Block(f"h{level}", text, depth))
            elif row is not None:
                row.append(text.replace("\n", " "))
            else:
                blocks.append(Block("body", prefix + text, depth))
                prefix = ""
    return blocks


def _layout_lines(block: Block, usable_pt: float) -> list[str]:
    size, weight, family, _before = _STYLES[block.style]
    width_pt = usable_pt - block.indent * _INDENT_PT
    columns = max(10, int(width_pt / (size * _CHAR_WIDTH_EM[family, weight])))
    lines: list[str] = []
    if block.style == "code":
        for line in block.text.expandtabs(4).split("\n"):
            lines.extend([line[i : i + columns] for i in range(0, len(line), columns)] or [""])
        return lines
    for paragraph in block.text.split("\n"):
        lines.extend(textwrap.wrap(paragraph, columns, break_long_words=True) or [""])
    return lines


def _pages(blocks: Sequence[Block]) -> Iterator[list[tuple[Block, str, float]]]:
    """Lines with their y position (points from the bottom), page by page."""
    width_pt, height_pt = A4_INCHES[0] * 72, A4_INCHES[1] * 72
    usable = width_pt - 2 * _MARGIN_PT
    page: list[tuple[Block, str, float]] = []
    y = height_pt - _MARGIN_PT
    for block in blocks:
        size, _weight, _family, before = _STYLES[block.style]
        line_height = size * 1.35
        y -= before if page else 0.0
        lines = [""] if block.style == "rule" else _layout_lines(block, usable)
        for line in lines:
            if y - line_height < _MARGIN_PT and page:
                yield page
                page, y = [], height_pt - _MARGIN_PT
            page.append((block, line, y))
            y -= line_height
    if page:
        yield page


def markdown_to_pdf(markdown: str, *, title: str) -> bytes:
    """A text-only A4 PDF of ``markdown`` (see the module documentation), as bytes.

    The PDF's ``Title`` is ``title``; no creation date is written, so the same
    input gives the same bytes (and the duplicate check recognises it).
    """
    try:
        from matplotlib.backends.backend_pdf import PdfPages
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError as exc:
        raise MissingExtra("PDF rendering", "tools", "matplotlib") from exc

    blocks = markdown_blocks(markdown) or [Block("body", "")]
    width_pt, height_pt = A4_INCHES[0] * 72, A4_INCHES[1] * 72
    buffer = io.BytesIO()
    metadata = {"Title": title, "CreationDate": None, "Creator": "docbinder"}
    with PdfPages(buffer, metadata=metadata) as pdf:
        for page in _pages(blocks):
            figure = Figure(figsize=A4_INCHES)
            for block, line, y in page:
                x = (_MARGIN_PT + block.indent * _INDENT_PT) / width_pt
                if block.style == "rule":
                    mid = (y - _STYLES["rule"][0] * 0.6) / height_pt
                    figure.add_artist(
                        Line2D(
                            [x, 1 - _MARGIN_PT / width_pt],
                            [mid, mid],
                            transform=figure.transFigure,
                            color="#999999",
                            linewidth=0.8,
                        )
                    )
                    continue
                if not line:
                    continue
                size, weight, family, _before = _STYLES[block.style]
                figure.text(
                    x,
                    y / height_pt,
                    line,
                    fontsize=size,
                    fontweight=weight,
                    fontfamily=family,
                    va="top",
                    ha="left",
                    parse_math=False,
                )
            pdf.savefig(figure)
    return buffer.getvalue()
