"""Chart spec validation and PNG rendering (SPEC C10 ``create_chart``)."""

from __future__ import annotations

import io
from typing import Any

import matplotlib
import pytest
from PIL import Image

from docbinder.domain.errors import InvalidInput
from docbinder.tools import ChartSpec, Series, parse_chart_spec, render_chart_png

BAR = {
    "kind": "bar",
    "title": "Revenue",
    "series": [
        {"name": "2024", "labels": ["North", "South"], "values": [61, 48.5]},
        {"name": "2025", "labels": ["North", "South"], "values": [70, 40]},
    ],
}


def test_a_valid_spec_becomes_a_chart_spec() -> None:
    assert parse_chart_spec(BAR) == ChartSpec(
        kind="bar",
        title="Revenue",
        series=(
            Series("2024", ("North", "South"), (61.0, 48.5)),
            Series("2025", ("North", "South"), (70.0, 40.0)),
        ),
    )


def test_json_text_and_a_code_fence_are_accepted() -> None:
    text = '```json\n{"kind": "Line", "series": [{"name": "s", "labels": [2023, 2024.0], "values": [1, 2]}]}\n```'
    assert parse_chart_spec(text) == ChartSpec(
        kind="line", title="", series=(Series("s", ("2023", "2024"), (1.0, 2.0)),)
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "{not json",
            "chart spec: not valid JSON (Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)); got '{not json' (str); accepted: a JSON object such as "
            '{"kind": "bar", "title": "Revenue", "series": [{"name": "2026", '
            '"labels": ["North", "South"], "values": [61, 48]}]}',
        ),
        (
            [1, 2],
            "chart spec (table): got [1, 2] (list); accepted: "
            '{"labels": [...], "values": [...]}, rows [{"label": "North", "value": 61}], '
            '[["North", 61]] pairs, records [{"region": "North", "2026": 61}] or {"North": 61}; '
            'example: {"kind": "bar", "labels": ["North", "South"], "values": [61, 48]}',
        ),
        (
            "7",
            "chart spec: got 7 (int), which is no chart spec shape known; accepted: docbinder "
            "{kind, title, series: [{name, labels, values}]}; Chart.js {type, data: {labels, "
            "datasets: [{label, data}]}}; Vega-Lite {mark, data: {values: [...]}, encoding: "
            "{x: {field}, y: {field}}}; Plotly {data: [{type, x, y, name}], layout: {title}}; "
            'a table {labels: [...], values: [...]} or rows [{"label": ..., "value": ...}]; '
            'example: {"kind": "bar", "title": "Revenue", "series": [{"name": "2026", '
            '"labels": ["North", "South"], "values": [61, 48]}]}',
        ),
        (
            {"kind": "scatter", "series": []},
            "chart spec: 'kind' must be one of bar, line, pie, got 'scatter'; accepted: bar "
            "(also column), line (also lines, time series), pie (also doughnut, donut); "
            'example: "kind": "bar"',
        ),
        (
            {"kind": "bar", "type": "x", "series": []},
            "chart spec: both 'kind' and 'type' are given ('bar', 'x'); accepted: one of them; "
            'example: "kind": "bar"',
        ),
        ({"kind": "bar", "series": []}, "chart spec: 'series' must be a non-empty list"),
        (
            {"kind": "bar", "colour": "x", "series": []},
            "chart spec: unknown key(s) 'colour' in the chart; allowed: kind, title, series, x_label, y_label",
        ),
        (
            {"kind": "bar", "title": 5, "series": [{"labels": ["a"], "values": [1]}]},
            "chart spec: 'title' must be a string, got int",
        ),
        (
            {"kind": "bar", "series": ["x"]},
            "chart spec: series 1 must be an object with 'name', 'labels' and 'values'",
        ),
        (
            {"kind": "bar", "series": [{"labels": ["a", "b"], "values": [1]}]},
            "chart spec: series 1 has 2 labels but 1 values",
        ),
        (
            {"kind": "bar", "series": [{"labels": ["a"], "values": ["many"]}]},
            "chart spec: series 1 value 1 must be a number or a numeric string, got 'many'",
        ),
        (
            {"kind": "bar", "series": [{"labels": ["a"], "values": [True]}]},
            "chart spec: series 1 value 1 must be a number or a numeric string, got True",
        ),
        (
            {"kind": "bar", "series": [{"labels": ["a"], "values": [float("nan")]}]},
            "chart spec: series 1 value 1 must be a finite number, got nan",
        ),
        (
            {"kind": "bar", "series": [{"labels": [None], "values": [1]}]},
            "chart spec: series 1 label 1 must be a string or a number, got NoneType",
        ),
        (
            {"kind": "bar", "series": [{"labels": ["a"], "values": [1], "colour": "red"}]},
            "chart spec: unknown key(s) 'colour' in series 1; allowed: name, labels, values",
        ),
        (
            {
                "kind": "line",
                "series": [
                    {"name": "a", "labels": ["x"], "values": [1]},
                    {"name": "b", "labels": ["y"], "values": [1]},
                ],
            },
            "chart spec: every series of a line chart needs the same labels; 'b' differs from 'a'",
        ),
        (
            {
                "kind": "pie",
                "series": [{"labels": ["x"], "values": [1]}, {"labels": ["x"], "values": [1]}],
            },
            "chart spec: a pie chart needs exactly one series, got 2",
        ),
        (
            {"kind": "pie", "series": [{"labels": ["x", "y"], "values": [1, -1]}]},
            "chart spec: a pie chart needs non-negative values with a positive sum",
        ),
        (
            {"kind": "bar", "series": [{"labels": ["a"] * 1001, "values": [1] * 1001}]},
            "chart spec: series 1 has more than 1000 values",
        ),
    ],
)
def test_bad_specs_are_refused_with_a_clear_message(spec: Any, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_chart_spec(spec)
    assert str(caught.value) == message


@pytest.mark.parametrize("kind", ["bar", "line", "pie"])
def test_every_kind_renders_a_png_of_the_requested_size(kind: str) -> None:
    series = BAR["series"] if kind != "pie" else BAR["series"][:1]
    spec = parse_chart_spec({"kind": kind, "title": "Costs in $ and € ($5)", "series": series})
    rc_before = dict(matplotlib.rcParams)
    png = render_chart_png(spec, width_px=640, height_px=480)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert Image.open(io.BytesIO(png)).size == (640, 480)
    assert dict(matplotlib.rcParams) == rc_before  # no global state changed


def test_the_same_spec_renders_the_same_bytes() -> None:
    spec = parse_chart_spec(BAR)
    assert render_chart_png(spec) == render_chart_png(spec)
