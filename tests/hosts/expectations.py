"""What each host's model is expected to receive from docbinder's MCP server: one table per host.

The cells are the facts :func:`tests.hosts.harness.facts` draws from one run
of the scripted conversation (Markdown written, PNG written, both read back):

========================  ==================================================================
``produce.ok``            the Markdown ``write_file`` reached the server and succeeded
``produce.text``          its ``documentList ref: docItem:`` line reached the model as text
``produce.ids``           its ``docItem:`` reference and file id reached the model (any part)
``produce.resource_link`` a ``docbinder://documents/<id>`` link reached the model
``produce.structured``    the result's ``structuredContent`` reached the model
``produce.handle``        a workflow handle (``workflow: <id>``) reached the model
``png.ok``                the PNG ``write_file`` (``encoding: "base64"``) succeeded
``consume.ok``            ``read_documents`` with the references the model saw succeeded
``consume.resolved``      how many documents it read (2 when nothing was lost)
``consume.ids``           the references and file ids of both documents reached the model
``consume.notes``         the Markdown file's text reached the model
``consume.image``         the PNG reached the model as an image
``consume.image_as_text`` the PNG's base64 reached the model inside text
``consume.resource_link`` a document link reached the model from the read
``consume.structured``    the read's ``structuredContent`` reached the model
``consume.handle``        the read named its workflow to the model
========================  ==================================================================

Two server eras: ``"sessions"`` (the server before workflow handles: one
workflow per MCP session, text and image blocks only) and ``"handles"`` (the
server with ``workflow`` handles, one ``resource_link`` per produced file and
``structuredContent`` under a declared ``outputSchema``, which is the server
now). :data:`SERVER_ERA` names the era the tests assert. A :class:`Cell`'s ``now`` is asserted in the ``sessions`` era, its
``then`` in the ``handles`` era. A cell whose ``now`` is a failure that the
handles server fixes carries a ``gap`` reason: in the ``sessions`` era its
``then`` value is asserted as a strict xfail, so the fix turns it into an
XPASS that fails the run until :data:`SERVER_ERA` is switched.

``python -m tests.hosts.expectations`` prints the matrix of the MCP guide (:data:`MATRIX_PAGE`) for the era.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

SERVER_ERA = "handles"
"""The server the tests assert: ``"handles"``, the server with workflow handles (``"sessions"``
is the server before them, kept so the table shows what the handles fixed)."""


@dataclass(frozen=True)
class Cell:
    """One expected fact: ``now`` (sessions era), ``then`` (handles era), ``gap`` (why ``now`` is a failure)."""

    now: Any
    then: Any
    gap: str | None = None


@dataclass(frozen=True)
class Gap:
    """A ``now`` value that is a failure the handles server fixes, with the reason."""

    value: Any
    reason: str


NOW: dict[str, Any] = {
    "produce.ok": True,
    "produce.text": True,
    "produce.ids": True,
    "produce.resource_link": False,
    "produce.structured": False,
    "produce.handle": False,
    "png.ok": True,
    "consume.ok": True,
    "consume.resolved": 2,
    "consume.ids": True,
    "consume.notes": True,
    "consume.image": True,
    "consume.image_as_text": False,
    "consume.resource_link": False,
    "consume.structured": False,
    "consume.handle": False,
}
"""The sessions server as a host that passes every block on shows it: text and images only."""

THEN: dict[str, Any] = {
    **NOW,
    "produce.resource_link": True,
    "produce.structured": True,
    "produce.handle": True,
    "consume.structured": True,
    "consume.handle": True,
}
"""The handles server as such a host shows it: links and structured results added, handles named."""

ENCODING = (
    "the published write_file schema lists the nullable `encoding` as required; the SDK "
    "validates before sending and the model sees only 'An error occurred while running the tool'"
)
PER_CALL_PROCESS = (
    "get_tools() starts a server process per call, so each call is a new workflow and the "
    "read answers not_in_workflow for the references the model got"
)


def _table(
    now: dict[str, Any] | None = None, then: dict[str, Any] | None = None
) -> dict[str, Cell]:
    now, then = now or {}, then or {}
    cells = {}
    for key in NOW:
        value = now.get(key, NOW[key])
        gap = value.reason if isinstance(value, Gap) else None
        cells[key] = Cell(
            value.value if isinstance(value, Gap) else value, then.get(key, THEN[key]), gap
        )
    return cells


EXPECTATIONS: dict[str, dict[str, Cell]] = {
    # The SDK client is no agent: the application gets the whole CallToolResult.
    "mcp-sdk-stdio": _table(),
    "mcp-sdk-http": _table(),
    "mcp-sdk-http-legacy": _table(),
    # Text and images as input items; other blocks as their JSON text; structuredContent unused.
    "openai-agents": _table(
        now={
            "produce.ok": Gap(False, ENCODING),
            "produce.text": Gap(False, ENCODING),
            "produce.ids": Gap(False, ENCODING),
            "consume.resolved": Gap(1, ENCODING),
            "consume.ids": Gap(False, ENCODING),
            "consume.notes": Gap(False, ENCODING),
        },
        then={"produce.structured": False, "consume.structured": False},
    ),
    # use_structured_content=True: only structuredContent, when there is one (text, images, links dropped).
    "openai-agents-structured": _table(
        now={
            "produce.ok": Gap(False, ENCODING),
            "produce.text": False,
            "produce.ids": Gap(False, ENCODING),
            "consume.resolved": Gap(1, ENCODING),
            "consume.ids": Gap(False, ENCODING),
            "consume.notes": Gap(False, ENCODING),
        },
        then={
            "produce.text": False,
            "produce.resource_link": False,
            "consume.image": False,
        },
    ),
    # Blocks mapped to str / BinaryImage / the link's URI; structuredContent only when all blocks are text.
    "pydantic-ai": _table(then={"produce.structured": False, "consume.structured": False}),
    # Blocks as content blocks (a link as a `file` block); structuredContent in the artifact only.
    "langchain": _table(
        now={
            "consume.resolved": Gap(0, PER_CALL_PROCESS),
            "consume.ids": Gap(False, PER_CALL_PROCESS),
            "consume.notes": Gap(False, PER_CALL_PROCESS),
            "consume.image": Gap(False, PER_CALL_PROCESS),
        },
        then={"produce.structured": False, "consume.structured": False},
    ),
    "langchain-session": _table(then={"produce.structured": False, "consume.structured": False}),
    # The whole CallToolResult as the function response's JSON: images only as base64 text.
    "adk": _table(
        now={"consume.image": False, "consume.image_as_text": True},
        then={"consume.image": False, "consume.image_as_text": True},
    ),
}


def expected(host: str, era: str = SERVER_ERA) -> dict[str, Any]:
    """The facts asserted for ``host`` in ``era`` (gap cells keep their failing ``now`` value)."""
    cells = EXPECTATIONS[host]
    return {key: (cell.now if era == "sessions" else cell.then) for key, cell in cells.items()}


def gaps(era: str = SERVER_ERA) -> list[tuple[str, str, Cell]]:
    """``(host, cell, Cell)`` for every gap asserted as a strict xfail in ``era`` (none once fixed)."""
    if era != "sessions":
        return []
    return [
        (host, key, cell)
        for host, cells in EXPECTATIONS.items()
        for key, cell in cells.items()
        if cell.gap is not None
    ]


# -- the MCP guide's matrix -------------------------------------------------------------------

MATRIX_PAGE = "docs/guides/mcp.md"
"""The page that shows the matrix, between :data:`MATRIX_BEGIN` and :data:`MATRIX_END`."""
MATRIX_BEGIN = "<!-- host matrix: python -m tests.hosts.expectations -->"
MATRIX_END = "<!-- end of host matrix -->"

_COLUMNS = (
    ("write: accepted", "produce.ok"),
    ("write: reference and file id", "produce.ids"),
    ("write: text block", "produce.text"),
    ("write: resource_link", "produce.resource_link"),
    ("write: structuredContent", "produce.structured"),
    ("workflow handle", "produce.handle"),
    ("read: file's text", "consume.notes"),
    ("read: image", "consume.image"),
    ("read: structuredContent", "consume.structured"),
)

HOW: dict[str, str] = {
    "MCP SDK `Client`": "the application gets the whole `CallToolResult` (no model in between)",
    "OpenAI Agents SDK": (
        "text and image blocks become input items, a `resource_link` its JSON as text; "
        "`structuredContent` is not passed"
    ),
    "OpenAI Agents SDK, `use_structured_content=True`": (
        "only `structuredContent` reaches the model, as JSON text: its references, file ids, "
        "`workflow` and, for a read, each document's text; text blocks, images and links are "
        "dropped"
    ),
    "pydantic-ai": (
        "text as strings, images as `BinaryImage`, a link as its URI; `structuredContent` "
        "only when every block is text"
    ),
    "LangChain": (
        "blocks become content blocks (a link a `file` or `image` block holding the "
        "`docbinder://` URI); `structuredContent` stays in the message's artifact, which the "
        "model never sees; `get_tools()` starts a server process per call, the `workflow` "
        "handle carries the files across them"
    ),
    "Google ADK": "the whole `CallToolResult` as the function response's JSON: images as base64 text",
}
"""How each host family passes a result on to its model, shown under the matrix."""


def render_matrix(era: str = SERVER_ERA) -> str:
    """The MCP guide's table of what reached each host's model in ``era``, with its notes."""
    from tests.hosts.harness import BY_NAME

    notes: list[str] = []
    header = "| host (its own MCP client) | " + " | ".join(title for title, _ in _COLUMNS) + " |"
    lines = [MATRIX_BEGIN, header, "|---" * (len(_COLUMNS) + 1) + "|"]
    for host, cells in EXPECTATIONS.items():
        values = expected(host, era)
        row = []
        for _, key in _COLUMNS:
            cell = cells[key]
            text = "yes" if values[key] else "no"
            if key == "consume.image" and not values[key] and values["consume.image_as_text"]:
                text = "no: base64 text inside JSON"
            if era == "sessions" and cell.gap is not None:
                if cell.gap not in notes:
                    notes.append(cell.gap)
                text += f" ({notes.index(cell.gap) + 1})"
            row.append(text)
        lines.append(f"| {BY_NAME[host].title} | " + " | ".join(row) + " |")
    lines.append("")
    lines.extend(f"({n}) {reason}." for n, reason in enumerate(notes, 1))
    if era != "sessions":
        lines.extend(f"- {family}: {how}." for family, how in HOW.items())
    lines.append(MATRIX_END)
    return "\n".join(line for line in lines if line is not None)


if __name__ == "__main__":
    print(render_matrix(sys.argv[1] if len(sys.argv) > 1 else SERVER_ERA))
