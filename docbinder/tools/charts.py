"""Chart specs and their PNG rendering for ``create_chart`` (SPEC C10).

A chart spec is JSON (a dict, or the same as a JSON string, optionally inside
a markdown code fence)::

    {
      "kind": "bar" | "line" | "pie",
      "title": "Revenue by region",              # optional
      "x_label": "region", "y_label": "EUR m",   # optional, not for pie
      "series": [
        {"name": "2024", "labels": ["North", "South"], "values": [61, 48]}
      ]
    }

The dialects models write (Chart.js, a Vega-Lite subset, a Plotly-like subset,
plain tables and rows) are translated into this shape first, and chart kinds
are read loosely (``"Column chart"`` is ``bar``, ``"doughnut"`` is ``pie``);
see :mod:`docbinder.tools.chart_dialects`.

Rules (:func:`parse_chart_spec`; each violation is an
:class:`~docbinder.domain.errors.InvalidInput` whose message starts with
``chart spec:`` and names the field): 1 to :data:`MAX_SERIES` series of 1 to
:data:`MAX_POINTS` points; labels are strings or numbers, values finite numbers
or strings holding one (``"61"``, ``"1,234.5"``; not booleans), as many labels
as values; a bar or line chart with several
series has the same labels in every series; a pie chart has exactly one series
of non-negative values with a positive sum. Unknown keys are refused, so a typo
is reported instead of silently ignored.

Rendering uses matplotlib ``Figure`` objects with the Agg canvas (no pyplot,
no global state) and gives PNG bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import Any, Final

import attrs

from docbinder.domain.errors import InvalidInput, MissingExtra
from docbinder.tools.arguments import parse_number
from docbinder.tools.chart_dialects import (
    ACCEPTED_KINDS,
    DOCBINDER_EXAMPLE,
    chart_kind,
    to_docbinder_spec,
)

CHART_KINDS: Final = ("bar", "line", "pie")
"""The chart kinds :func:`render_chart_png` draws."""

MAX_SERIES: Final = 20
"""Most series in one chart."""

MAX_POINTS: Final = 1000
"""Most points (labels/values) in one series."""

MAX_TEXT: Final = 200
"""Longest title, axis label, series name or point label, in characters."""

_TOP_KEYS: Final = ("kind", "title", "series", "x_label", "y_label")
_SERIES_KEYS: Final = ("name", "labels", "values")


@attrs.frozen
class Series:
    """One data series: a name and (label, value) pairs."""

    name: str
    labels: tuple[str, ...]
    values: tuple[float, ...]


@attrs.frozen
class ChartSpec:
    """A validated chart spec; see the module documentation."""

    kind: str
    title: str
    series: tuple[Series, ...]
    x_label: str = ""
    y_label: str = ""


def _fail(message: str) -> InvalidInput:
    return InvalidInput(f"chart spec: {message}")


def _text(value: object, where: str, *, optional: bool = False) -> str:
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise _fail(f"{where} must be a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise _fail(f"{where} is longer than {MAX_TEXT} characters")
    return value.strip()


def _label(value: object, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _fail(f"{where} must be a string or a number, got {type(value).__name__}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _text(str(value), where)


def _number(value: object, where: str) -> float:
    number = parse_number(value)
    if number is None:
        raise _fail(f"{where} must be a number or a numeric string, got {value!r}")
    if not math.isfinite(number):
        raise _fail(f"{where} must be a finite number, got {value!r}")
    return number


def _unknown(keys: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    extra = [k for k in keys if k not in allowed]
    if extra:
        names = ", ".join(repr(k) for k in extra)
        raise _fail(f"unknown key(s) {names} in {where}; allowed: {', '.join(allowed)}")


def _series(raw: object, number: int) -> Series:
    where = f"series {number}"
    if not isinstance(raw, Mapping):
        raise _fail(f"{where} must be an object with 'name', 'labels' and 'values'")
    _unknown(raw, _SERIES_KEYS, where)
    name = _text(raw.get("name", f"series {number}"), f"{where} 'name'")
    labels, values = raw.get("labels"), raw.get("values")
    if not isinstance(values, list) or not values:
        raise _fail(f"{where} 'values' must be a non-empty list of numbers")
    if not isinstance(labels, list):
        raise _fail(f"{where} 'labels' must be a list of strings")
    if len(values) > MAX_POINTS:
        raise _fail(f"{where} has more than {MAX_POINTS} values")
    if len(labels) != len(values):
        raise _fail(f"{where} has {len(labels)} labels but {len(values)} values")
    return Series(
        name=name or f"series {number}",
        labels=tuple(_label(v, f"{where} label {i}") for i, v in enumerate(labels, start=1)),
        values=tuple(_number(v, f"{where} value {i}") for i, v in enumerate(values, start=1)),
    )


def parse_chart_spec(spec: object) -> ChartSpec:
    """Validate a chart spec in any accepted dialect into a :class:`ChartSpec`.

    ``spec`` is a dict or list, or JSON text of one (optionally code-fenced),
    in docbinder's own shape (the module documentation) or one of the dialects
    of :mod:`docbinder.tools.chart_dialects` (Chart.js, Vega-Lite, Plotly, a
    plain table). Raises :class:`InvalidInput` with a message starting
    ``chart spec:`` (``chart spec (<dialect>):`` for the other dialects).
    """
    dialect, translated = to_docbinder_spec(spec)
    try:
        return _validate(translated)
    except InvalidInput as exc:
        if dialect == "docbinder":
            raise
        message = str(exc).removeprefix("chart spec: ")
        raise InvalidInput(f"chart spec ({dialect}): {message}") from exc


def _validate(spec: object) -> ChartSpec:
    if not isinstance(spec, Mapping):
        raise _fail(f"must be a JSON object; example: {DOCBINDER_EXAMPLE}")
    _unknown(spec, _TOP_KEYS, "the chart")
    if "kind" not in spec:
        raise _fail(f"'kind' is missing; accepted: {ACCEPTED_KINDS}; example: {DOCBINDER_EXAMPLE}")
    kind = chart_kind(spec["kind"])
    title = _text(spec.get("title"), "'title'", optional=True)
    raw_series = spec.get("series")
    if not isinstance(raw_series, list) or not raw_series:
        raise _fail("'series' must be a non-empty list")
    if len(raw_series) > MAX_SERIES:
        raise _fail(f"'series' has more than {MAX_SERIES} entries")
    series = tuple(_series(raw, i) for i, raw in enumerate(raw_series, start=1))
    if kind == "pie":
        if len(series) != 1:
            raise _fail(f"a pie chart needs exactly one series, got {len(series)}")
        if any(v < 0 for v in series[0].values) or sum(series[0].values) <= 0:
            raise _fail("a pie chart needs non-negative values with a positive sum")
    else:
        for other in series[1:]:
            if other.labels != series[0].labels:
                raise _fail(
                    f"every series of a {kind} chart needs the same labels; "
                    f"{other.name!r} differs from {series[0].name!r}"
                )
    return ChartSpec(
        kind=kind,
        title=title,
        series=series,
        x_label=_text(spec.get("x_label"), "'x_label'", optional=True),
        y_label=_text(spec.get("y_label"), "'y_label'", optional=True),
    )


def _plain(text: str) -> str:
    """Escape ``$`` so matplotlib shows the text as written instead of as math."""
    return text.replace("$", r"\$")


def render_chart_png(spec: ChartSpec, *, width_px: int = 800, height_px: int = 500) -> bytes:
    """Draw ``spec`` and return PNG bytes of ``width_px`` x ``height_px`` pixels.

    Bar charts group the series side by side per label; line charts draw one
    line with markers per series; pie charts show each share in percent. A
    legend is drawn when there is more than one series.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtra("chart rendering", "tools", "matplotlib") from exc

    dpi = 100
    figure = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    first = spec.series[0]
    labels = [_plain(label) for label in first.labels]
    positions = list(range(len(labels)))
    if spec.kind == "pie":
        axes.pie(
            first.values,
            labels=labels,
            autopct="%1.1f%%",
            startangle=90,
            counterclock=False,
        )
        axes.set_aspect("equal")
    else:
        if spec.kind == "bar":
            width = 0.8 / len(spec.series)
            for index, series in enumerate(spec.series):
                offsets = [p - 0.4 + width * (index + 0.5) for p in positions]
                axes.bar(offsets, series.values, width, label=_plain(series.name))
        else:
            for series in spec.series:
                axes.plot(positions, series.values, marker="o", label=_plain(series.name))
        axes.set_xticks(positions, labels)
        if len(labels) > 6:
            axes.tick_params(axis="x", labelrotation=45)
        if spec.x_label:
            axes.set_xlabel(_plain(spec.x_label))
        if spec.y_label:
            axes.set_ylabel(_plain(spec.y_label))
        axes.grid(axis="y", alpha=0.3)
    if spec.title:
        axes.set_title(_plain(spec.title))
    if len(spec.series) > 1:
        axes.legend()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
