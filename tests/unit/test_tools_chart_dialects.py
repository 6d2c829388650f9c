"""Chart specs as models write them: Chart.js, Vega-Lite, Plotly, plain tables, loose kinds.

Every spec below is written the way a model sends it (JSON text with a fence, styling keys
the chart ignores, numbers as strings) and must become the expected docbinder chart.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from docbinder.domain.errors import InvalidInput
from docbinder.tools import ChartSpec, Series, parse_chart_spec, render_chart_png
from docbinder.tools.chart_dialects import chart_kind, to_docbinder_spec

REGIONS = ("North", "South", "East")

# -- Chart.js -------------------------------------------------------------------------------

CHARTJS: list[tuple[Any, ChartSpec]] = [
    (
        {
            "type": "bar",
            "data": {
                "labels": ["North", "South", "East"],
                "datasets": [
                    {"label": "2025", "data": [55, 41, 30], "backgroundColor": "#36a2eb"},
                    {"label": "2026", "data": [61, 48, 35], "backgroundColor": "#ff6384"},
                ],
            },
            "options": {
                "responsive": True,
                "plugins": {"title": {"display": True, "text": "Revenue by region"}},
                "scales": {
                    "x": {"title": {"display": True, "text": "Region"}},
                    "y": {"beginAtZero": True, "title": {"display": True, "text": "EUR m"}},
                },
            },
        },
        ChartSpec(
            "bar",
            "Revenue by region",
            (
                Series("2025", REGIONS, (55.0, 41.0, 30.0)),
                Series("2026", REGIONS, (61.0, 48.0, 35.0)),
            ),
            x_label="Region",
            y_label="EUR m",
        ),
    ),
    (
        "```json\n"
        + json.dumps(
            {
                "type": "doughnut",
                "data": {
                    "labels": ["Chrome", "Safari", "Other"],
                    "datasets": [{"data": ["64.5", "19.2", "16.3"], "hoverOffset": 4}],
                },
                "options": {"title": {"display": True, "text": "Browser share"}},
            },
            indent=2,
        )
        + "\n```",
        ChartSpec(
            "pie",
            "Browser share",
            (Series("series 1", ("Chrome", "Safari", "Other"), (64.5, 19.2, 16.3)),),
        ),
    ),
    (
        {
            "type": "line",
            "data": {
                "datasets": [
                    {
                        "label": "Users",
                        "data": [
                            {"x": "Jan", "y": 120},
                            {"x": "Feb", "y": 180},
                            {"x": "Mar", "y": 240},
                        ],
                        "fill": False,
                        "tension": 0.1,
                    }
                ]
            },
            "options": {
                "scales": {
                    "xAxes": [{"scaleLabel": {"display": True, "labelString": "Month"}}],
                    "yAxes": [{"scaleLabel": {"display": True, "labelString": "Active users"}}],
                }
            },
        },
        ChartSpec(
            "line",
            "",
            (Series("Users", ("Jan", "Feb", "Mar"), (120.0, 180.0, 240.0)),),
            x_label="Month",
            y_label="Active users",
        ),
    ),
    (
        {
            "type": "Column",
            "title": "Tickets",
            "data": {
                "labels": [2024, 2025],
                "datasets": [{"label": "Closed", "data": [1200, 1350.0]}],
            },
        },
        ChartSpec("bar", "Tickets", (Series("Closed", ("2024", "2025"), (1200.0, 1350.0)),)),
    ),
]

# -- Vega-Lite ------------------------------------------------------------------------------

VEGA_LITE: list[tuple[Any, ChartSpec]] = [
    (
        {
            "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "description": "Revenue per region",
            "title": "Revenue 2026",
            "data": {
                "values": [
                    {"region": "North", "revenue": 61},
                    {"region": "South", "revenue": 48},
                    {"region": "East", "revenue": 35},
                ]
            },
            "mark": "bar",
            "encoding": {
                "x": {"field": "region", "type": "nominal", "title": "Region"},
                "y": {"field": "revenue", "type": "quantitative", "axis": {"title": "EUR m"}},
            },
        },
        ChartSpec(
            "bar",
            "Revenue 2026",
            (Series("revenue", REGIONS, (61.0, 48.0, 35.0)),),
            x_label="Region",
            y_label="EUR m",
        ),
    ),
    (
        {
            "data": {
                "values": [
                    {"month": "Jan", "users": "120", "plan": "free"},
                    {"month": "Feb", "users": "180", "plan": "free"},
                    {"month": "Jan", "users": "30", "plan": "pro"},
                    {"month": "Feb", "users": "45", "plan": "pro"},
                ]
            },
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": {"field": "month", "type": "ordinal"},
                "y": {"field": "users", "type": "quantitative"},
                "color": {"field": "plan", "type": "nominal"},
            },
        },
        ChartSpec(
            "line",
            "",
            (
                Series("free", ("Jan", "Feb"), (120.0, 180.0)),
                Series("pro", ("Jan", "Feb"), (30.0, 45.0)),
            ),
            x_label="month",
            y_label="users",
        ),
    ),
    (
        {
            "title": {"text": "Budget split"},
            "data": {"values": [{"team": "R&D", "share": 50}, {"team": "Sales", "share": 30}]},
            "mark": {"type": "arc", "innerRadius": 50},
            "encoding": {
                "theta": {"field": "share", "type": "quantitative"},
                "color": {"field": "team", "type": "nominal"},
            },
        },
        ChartSpec("pie", "Budget split", (Series("team", ("R&D", "Sales"), (50.0, 30.0)),)),
    ),
    (
        {
            "data": {"values": [{"lang": "Python", "n": 12}, {"lang": "Go", "n": 5}]},
            "mark": "bar",
            "encoding": {
                "y": {"field": "lang", "type": "nominal"},
                "x": {"field": "n", "type": "quantitative"},
            },
        },
        ChartSpec(
            "bar", "", (Series("n", ("Python", "Go"), (12.0, 5.0)),), x_label="lang", y_label="n"
        ),
    ),
]

# -- Plotly ---------------------------------------------------------------------------------

PLOTLY: list[tuple[Any, ChartSpec]] = [
    (
        {
            "data": [
                {"type": "bar", "x": ["North", "South", "East"], "y": [55, 41, 30], "name": "2025"},
                {"type": "bar", "x": ["North", "South", "East"], "y": [61, 48, 35], "name": "2026"},
            ],
            "layout": {
                "title": {"text": "Revenue by region"},
                "barmode": "group",
                "xaxis": {"title": {"text": "Region"}},
                "yaxis": {"title": "EUR m"},
            },
        },
        ChartSpec(
            "bar",
            "Revenue by region",
            (
                Series("2025", REGIONS, (55.0, 41.0, 30.0)),
                Series("2026", REGIONS, (61.0, 48.0, 35.0)),
            ),
            x_label="Region",
            y_label="EUR m",
        ),
    ),
    (
        [
            {
                "x": ["2024-01", "2024-02", "2024-03"],
                "y": ["3.1", "3.4", "2.9"],
                "mode": "lines+markers",
                "name": "Latency",
            }
        ],
        ChartSpec(
            "line",
            "",
            (Series("Latency", ("2024-01", "2024-02", "2024-03"), (3.1, 3.4, 2.9)),),
        ),
    ),
    (
        {
            "data": [
                {
                    "type": "pie",
                    "labels": ["Rent", "Food", "Travel"],
                    "values": [1200, 450, 300],
                    "hole": 0.4,
                }
            ],
            "layout": {"title": "Monthly costs", "showlegend": True},
        },
        ChartSpec(
            "pie",
            "Monthly costs",
            (Series("series 1", ("Rent", "Food", "Travel"), (1200.0, 450.0, 300.0)),),
        ),
    ),
    (
        {
            "data": [
                {"type": "bar", "orientation": "h", "y": ["A", "B"], "x": [3, 7], "name": "votes"}
            ],
            "layout": {"title": "Poll"},
        },
        ChartSpec("bar", "Poll", (Series("votes", ("A", "B"), (3.0, 7.0)),)),
    ),
]

# -- plain tables ---------------------------------------------------------------------------

TABLES: list[tuple[Any, ChartSpec]] = [
    (
        {"labels": ["North", "South", "East"], "values": [61, 48, 35]},
        ChartSpec("bar", "", (Series("values", REGIONS, (61.0, 48.0, 35.0)),)),
    ),
    (
        [
            {"label": "North", "value": "61"},
            {"label": "South", "value": "48"},
            {"label": "East", "value": "35"},
        ],
        ChartSpec("bar", "", (Series("values", REGIONS, (61.0, 48.0, 35.0)),)),
    ),
    (
        {"kind": "Pie Chart", "title": "Share", "data": {"North": 61, "South": 48, "East": 35}},
        ChartSpec("pie", "Share", (Series("Share", REGIONS, (61.0, 48.0, 35.0)),)),
    ),
    (
        {"type": "line", "title": "Trend", "data": [["Q1", 10], ["Q2", 12.5], ["Q3", "1,015"]]},
        ChartSpec("line", "Trend", (Series("Trend", ("Q1", "Q2", "Q3"), (10.0, 12.5, 1015.0)),)),
    ),
    (
        {
            "kind": "bar",
            "rows": [
                {"region": "North", "2025": 55, "2026": 61},
                {"region": "South", "2025": 41, "2026": 48},
            ],
            "y_label": "EUR m",
        },
        ChartSpec(
            "bar",
            "",
            (
                Series("2025", ("North", "South"), (55.0, 41.0)),
                Series("2026", ("North", "South"), (61.0, 48.0)),
            ),
            y_label="EUR m",
        ),
    ),
]

TABLES.append(
    (
        {"type": "bar chart", "data": {"labels": ["a", "b"], "values": [1, 2]}, "title": "Nested"},
        ChartSpec("bar", "Nested", (Series("Nested", ("a", "b"), (1.0, 2.0)),)),
    )
)

TABLES.append(
    (
        {"type": "pie", "labels": ["Yes", "No"], "data": [30, "70"], "title": "Vote"},
        ChartSpec("pie", "Vote", (Series("Vote", ("Yes", "No"), (30.0, 70.0)),)),
    )
)
CHARTJS.append(
    (
        {"type": "line", "data": {"datasets": [{"label": "Visits", "data": {"Mon": 5, "Tue": 8}}]}},
        ChartSpec("line", "", (Series("Visits", ("Mon", "Tue"), (5.0, 8.0)),)),
    )
)
VEGA_LITE.append(
    (
        {
            "mark": "line",
            "data": [{"t": "Q1", "v": 1}, {"t": "Q2", "v": 2}],
            "encoding": {"x": {"field": "t"}, "y": {"field": "v", "title": "Value"}},
        },
        ChartSpec(
            "line", "", (Series("v", ("Q1", "Q2"), (1.0, 2.0)),), x_label="t", y_label="Value"
        ),
    )
)

# -- docbinder's own spec, written loosely --------------------------------------------------

DOCBINDER: list[tuple[Any, ChartSpec]] = [
    (
        {
            "type": "column chart",
            "series": {"name": "s", "labels": ["a", "b"], "values": ["1", "2"]},
        },
        ChartSpec("bar", "", (Series("s", ("a", "b"), (1.0, 2.0)),)),
    ),
    (
        {
            "chart_type": "LINE",
            "title": "T",
            "series": [{"label": "s", "labels": ["a"], "data": [3]}],
        },
        ChartSpec("line", "T", (Series("s", ("a",), (3.0,)),)),
    ),
    (
        '  ```\n{"kind": "donut", "series": [{"labels": ["x", "y"], "values": [1, 3]}]}\n```  ',
        ChartSpec("pie", "", (Series("series 1", ("x", "y"), (1.0, 3.0)),)),
    ),
]


@pytest.mark.parametrize(
    ("dialect", "spec", "expected"),
    [
        *(("Chart.js", s, e) for s, e in CHARTJS),
        *(("Vega-Lite", s, e) for s, e in VEGA_LITE),
        *(("Plotly", s, e) for s, e in PLOTLY),
        *(("table", s, e) for s, e in TABLES),
        *(("docbinder", s, e) for s, e in DOCBINDER),
    ],
)
def test_model_style_specs_become_the_expected_chart(
    dialect: str, spec: Any, expected: ChartSpec
) -> None:
    assert to_docbinder_spec(spec)[0] == dialect
    assert parse_chart_spec(spec) == expected


@pytest.mark.parametrize(
    "spec",
    [CHARTJS[0][0], VEGA_LITE[2][0], PLOTLY[1][0], TABLES[1][0]],
    ids=["chartjs", "vega", "plotly", "rows"],
)
def test_every_dialect_renders(spec: Any) -> None:
    assert render_chart_png(parse_chart_spec(spec)).startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("bar", "bar"),
        ("Bar Chart", "bar"),
        ("bar-chart", "bar"),
        ("COLUMN", "bar"),
        ("columns", "bar"),
        ("clustered_column", "bar"),
        ("line graph", "line"),
        ("Lines", "line"),
        ("time series", "line"),
        ("pie", "pie"),
        ("PieChart", "pie"),
        ("doughnut", "pie"),
        ("donut chart", "pie"),
        (" arc ", "pie"),
    ],
)
def test_loose_chart_kind_names(name: str, kind: str) -> None:
    assert chart_kind(name) == kind


@pytest.mark.parametrize("name", ["scatter", "area chart", "radar", "", None, 3, "chart"])
def test_unknown_chart_kinds_are_refused_with_the_accepted_names(name: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        chart_kind(name)
    assert str(caught.value) == (
        f"chart spec: 'kind' must be one of bar, line, pie, got {name!r}; accepted: bar "
        "(also column), line (also lines, time series), pie (also doughnut, donut); "
        'example: "kind": "bar"'
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"data": {"labels": ["a"], "datasets": [{"data": [1]}]}},
            "chart spec (Chart.js): 'type' is missing; accepted: bar (also column), line (also "
            'lines, time series), pie (also doughnut, donut); example: {"type": "bar", '
            '"data": {"labels": ["North", "South"], "datasets": [{"label": "2026", "data": [61, 48]}]}}',
        ),
        (
            {"type": "radar", "data": {"labels": ["a"], "datasets": [{"data": [1]}]}},
            "chart spec (Chart.js): 'kind' must be one of bar, line, pie, got 'radar'",
        ),
        (
            {
                "type": "bar",
                "data": {"labels": ["a", "b"], "datasets": [{"label": "s", "data": [1]}]},
            },
            "chart spec (Chart.js): series 1 has 2 labels but 1 values",
        ),
        (
            {
                "type": "bar",
                "data": {"labels": ["a"], "datasets": [{"label": "s", "data": [None]}]},
            },
            "chart spec (Chart.js): series 1 value 1 must be a number or a numeric string, got None",
        ),
        (
            {"type": "bar", "data": {"labels": ["a"], "datasets": []}},
            "chart spec (Chart.js): 'data.datasets' must be a non-empty list, got [] (list)",
        ),
        (
            {"mark": "bar", "data": {"url": "data/cars.json"}, "encoding": {}},
            "chart spec (Vega-Lite): 'data.values' must be a non-empty list of records (inline "
            "data; 'data.url' is not fetched)",
        ),
        (
            {
                "mark": "bar",
                "data": {"values": [{"a": "x", "b": 1}]},
                "encoding": {"x": {"field": "a"}, "y": {"field": "b", "aggregate": "sum"}},
            },
            "chart spec (Vega-Lite): encoding.y.aggregate 'sum' is not computed",
        ),
        (
            {
                "mark": "bar",
                "data": {"values": [{"a": "x", "b": 1}]},
                "encoding": {"x": {"field": "a"}},
            },
            "chart spec (Vega-Lite): encoding.x.field and encoding.y.field are needed",
        ),
        (
            {
                "mark": "bar",
                "data": {"values": [{"a": "x"}]},
                "encoding": {"x": {"field": "a"}, "y": {"field": "b"}},
            },
            "chart spec (Vega-Lite): record 1 has no field 'b', got {'a': 'x'} (dict)",
        ),
        (
            {"data": [{"type": "scatter", "mode": "markers", "x": [1], "y": [2]}]},
            "chart spec (Plotly): data[0] is a scatter plot of 'markers' without lines, which is not drawn",
        ),
        (
            {
                "data": [
                    {"type": "bar", "x": ["a"], "y": [1]},
                    {"type": "pie", "labels": ["a"], "values": [1]},
                ]
            },
            "chart spec (Plotly): the traces mix chart kinds (bar, pie)",
        ),
        (
            {"data": [{"type": "bar", "x": ["a", "b"]}]},
            "chart spec (Plotly): data[0] needs x and y as lists",
        ),
        (
            {"labels": ["a", "b"], "values": "1,2"},
            "chart spec (table): 'labels' and 'values' must both be lists, got labels=['a', 'b'] "
            "(list), values='1,2' (str)",
        ),
        ([{}], "chart spec (table): the rows have no columns, got [{}] (list)"),
        (
            [{"label": "a"}],
            "chart spec (table): the rows have no value column besides 'label'",
        ),
        (
            [{"label": "a", "value": "lots"}],
            "chart spec (table): series 1 value 1 must be a number or a numeric string, got 'lots'",
        ),
        (
            {"kind": "pie", "labels": ["a"], "values": [-1]},
            "chart spec (table): a pie chart needs non-negative values with a positive sum",
        ),
        (
            {"title": "x"},
            "chart spec: got {'title': 'x'} (dict) with keys 'title', which is no chart spec shape known",
        ),
    ],
)
def test_dialect_specs_that_cannot_be_used_say_why(spec: Any, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_chart_spec(spec)
    assert str(caught.value).startswith(message)
