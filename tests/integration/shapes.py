"""The argument shapes of issue 20 as each host sends them, and the check of what they stored.

Every host (the MCP server, LangChain, the OpenAI Agents SDK, pydantic-ai) sends
the same calls a model makes; :func:`check_stored` checks the tool results and
the stored files, the same way for every host. :data:`CALLS` is what a model
sends under a schema that takes objects (MCP, LangChain, pydantic-ai);
:data:`STRICT_CALLS` what it sends under the strict-mode encoding, where an
object is JSON text (OpenAI Agents SDK, ``docbinder_tools(run, strict=True)``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from docbinder.application.binder import Run
from tests.integration.frameworks import PNG

CHARTJS = {
    "type": "bar",
    "data": {"labels": ["North", "South"], "datasets": [{"label": "2026", "data": [61, 48]}]},
}
RECORD = {"region": "North", "revenue": 61}
ROWS = [["region", "revenue"], ["North", 61]]
PNG_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01"
JPEG_AS_PNG_URI = "data:image/png;base64," + base64.b64encode(JPEG).decode()

CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("chart", "create_chart", {"spec": CHARTJS, "name": None}),
    ("json", "write_file", {"name": "data.json", "content": RECORD, "encoding": None}),
    ("csv", "write_file", {"name": "rows.csv", "content": ROWS, "encoding": None}),
    ("png", "write_file", {"name": "chart.png", "content": PNG_URI, "encoding": None}),
    ("wrong", "write_file", {"name": "photo.png", "content": JPEG_AS_PNG_URI, "encoding": None}),
    (
        "formats",
        "render_document",
        {
            "markdown": "# Plan\n\nShip in May.",
            "name": "plan",
            "formats": "pdf, html",
            "title": None,
        },
    ),
)
"""``(key, tool, arguments)`` for each shape; ``wrong`` is refused, the others succeed."""

STRICT_CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = tuple(
    (
        key,
        tool,
        {
            **args,
            **({"spec": json.dumps(CHARTJS)} if key == "chart" else {}),
            **({"content": json.dumps(RECORD)} if key == "json" else {}),
        },
    )
    for key, tool, args in CALLS
)
""":data:`CALLS` as a strict schema has them: the chart spec and the JSON record as JSON text."""

_FILE_ID = re.compile(r"file id: ([0-9a-f-]{36})")


def check_stored(run: Run, results: Mapping[str, tuple[str, bool]]) -> None:
    """Check each call's ``(text the model saw, whether it failed)`` and the files stored.

    ``results`` maps the keys of :data:`CALLS` to the tool result. The chart is
    a PNG; ``data.json`` holds the record as JSON; ``rows.csv`` the rows as CSV;
    ``chart.png`` the decoded PNG bytes; ``photo.png`` is refused with the
    reason (its bytes are a JPEG image) and not stored; ``plan`` is rendered as
    a PDF and an HTML file.
    """
    assert set(results) == {key for key, _, _ in CALLS}
    for key, (text, failed) in results.items():
        assert failed is (key == "wrong"), (key, text)

    def stored(key: str) -> list[bytes]:
        ids = _FILE_ID.findall(results[key][0])
        assert ids, results[key][0]
        return [b"".join(run.open_file(file_id)) for file_id in ids]

    [chart] = stored("chart")
    assert chart.startswith(b"\x89PNG\r\n\x1a\n")
    assert results["chart"][0].startswith("Created chart ")
    [record] = stored("json")
    assert json.loads(record) == RECORD
    [rows] = stored("csv")
    assert rows == b"region,revenue\r\nNorth,61\r\n"
    [png] = stored("png")
    assert png == PNG
    wrong = results["wrong"][0]
    assert "'photo.png' is not a PNG image" in wrong and "are a JPEG image" in wrong
    assert "\n" not in wrong
    assert "photo.png" not in [item.file_name for item in run.list_files()]
    pdf, html = stored("formats")
    assert pdf.startswith(b"%PDF-") and b"Ship in May." in html
    assert "Rendered 'plan.pdf'" in results["formats"][0]
    assert "Rendered 'plan.html'" in results["formats"][0]


def strict_problems(schema: Mapping[str, Any], where: str = "") -> list[str]:
    """Violations of OpenAI strict mode in ``schema``, as the OpenAI documentation lists them.

    Every object closed (``additionalProperties: false``) with every property
    required; every property and array item typed; no open object anywhere; a
    type list at most one type and ``null`` (wider unions as ``anyOf``)
    (https://platform.openai.com/docs/guides/structured-outputs, "Supported schemas").
    """
    problems: list[str] = []
    types = schema.get("type")
    type_list = types if isinstance(types, list) else [types]
    if len([t for t in type_list if t != "null"]) > 1:
        problems.append(f"{where}: a type list wider than one type and null")
    if "object" in type_list:
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties is not false")
        if sorted(schema.get("required", [])) != sorted(props):
            problems.append(f"{where}: not every property is required")
        for key, sub in props.items():
            if not sub.get("type") and "anyOf" not in sub:
                problems.append(f"{where}.{key}: no type")
            problems += strict_problems(sub, f"{where}.{key}")
    if "array" in type_list:
        items = schema.get("items")
        if not isinstance(items, dict) or not ("type" in items or "anyOf" in items):
            problems.append(f"{where}[]: array items without a type")
        else:
            problems += strict_problems(items, f"{where}[]")
    for option in schema.get("anyOf", []):
        problems += strict_problems(option, f"{where}|")
    return problems
