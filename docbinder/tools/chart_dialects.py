"""Chart specs in the dialects models write, translated into docbinder's own chart spec.

:func:`to_docbinder_spec` recognises a spec by its keys and returns a dict in
the shape :func:`docbinder.tools.charts.parse_chart_spec` validates (``kind``,
``title``, ``x_label``, ``y_label``, ``series[].name/labels/values``). Only the
data, the chart kind and the titles are taken; styling (colours, borders,
tension, legends, sizes) is left out, since docbinder draws its own style.

Dialects (first match wins):

* **docbinder** (a ``series`` key): taken as is; ``type`` or ``chart_type``
  stand for ``kind``, a single series object for a list of one, and in a series
  ``data`` for ``values`` and ``label`` for ``name``;
* **Chart.js** (``data.datasets``; https://www.chartjs.org/docs/latest/general/data-structures.html):
  ``type``, ``data.labels``, ``data.datasets[].label/data`` (numbers,
  ``{x, y}`` points or a ``{label: value}`` object), ``options.plugins.title.text`` (v3+) or
  ``options.title.text`` (v2), ``options.scales.x/y.title.text``;
* **Vega-Lite** (``mark`` or ``encoding``; https://vega.github.io/vega-lite/docs/):
  ``mark`` (a name or ``{"type": ...}``; ``arc`` is a pie), inline
  ``data.values`` records (or a list of records as ``data``), ``encoding.x/y.field`` (``theta``/``color`` for
  arcs), ``encoding.color.field`` to split series, ``title``, ``encoding.x/y.title``;
* **Plotly** (a ``data`` list of traces; https://plotly.com/javascript/reference/):
  ``data[].type/x/y/name`` (``labels``/``values`` for pie, ``orientation: "h"``
  for horizontal bars), ``layout.title``, ``layout.xaxis/yaxis.title``;
  ``scatter`` traces are lines unless ``mode`` is markers only;
* **table**: ``{"labels": [...], "values": [...]}`` (``data`` for ``values``
  when it is a list of numbers), a list of rows
  (``{"label": ..., "value": ...}``, ``["label", value]`` pairs, or records such
  as ``{"region": "North", "2025": 61, "2026": 70}`` with one series per numeric
  column), or ``{"North": 61, "South": 48}`` (label -> number, every value a
  number or numeric string); alone or under ``data`` next to ``kind``/``title``;
  a table without a kind is a bar chart.

Chart kinds are read loosely by :func:`chart_kind`. Anything else raises
:class:`~docbinder.domain.errors.InvalidInput` starting ``chart spec``, with
what was received, the accepted shapes and an example.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from docbinder.domain.errors import InvalidInput
from docbinder.tools.arguments import load_json, preview, strip_fence

CHART_KIND_SYNONYMS: Final[Mapping[str, str]] = {
    "bar": "bar",
    "bars": "bar",
    "column": "bar",
    "columns": "bar",
    "col": "bar",
    "verticalbar": "bar",
    "groupedbar": "bar",
    "clusteredbar": "bar",
    "clusteredcolumn": "bar",
    "line": "line",
    "lines": "line",
    "timeseries": "line",
    "pie": "pie",
    "doughnut": "pie",
    "donut": "pie",
    "arc": "pie",
}
"""Loose chart kind names (lowercase, without spaces, ``-``, ``_`` or a ``chart`` suffix) -> kind."""

ACCEPTED_KINDS: Final = (
    "bar (also column), line (also lines, time series), pie (also doughnut, donut)"
)

_NOISE_WORDS_RE: Final = re.compile(r"(chart|graph|plot|diagram)s?$")

DOCBINDER_EXAMPLE: Final = (
    '{"kind": "bar", "title": "Revenue", "series": '
    '[{"name": "2026", "labels": ["North", "South"], "values": [61, 48]}]}'
)
CHARTJS_EXAMPLE: Final = (
    '{"type": "bar", "data": {"labels": ["North", "South"], '
    '"datasets": [{"label": "2026", "data": [61, 48]}]}}'
)
VEGA_LITE_EXAMPLE: Final = (
    '{"mark": "bar", "data": {"values": [{"region": "North", "revenue": 61}]}, '
    '"encoding": {"x": {"field": "region"}, "y": {"field": "revenue"}}}'
)
PLOTLY_EXAMPLE: Final = (
    '{"data": [{"type": "bar", "x": ["North", "South"], "y": [61, 48], "name": "2026"}], '
    '"layout": {"title": "Revenue"}}'
)
TABLE_EXAMPLE: Final = '{"kind": "bar", "labels": ["North", "South"], "values": [61, 48]}'

ACCEPTED_CHART_SHAPES: Final = (
    "docbinder {kind, title, series: [{name, labels, values}]}; "
    "Chart.js {type, data: {labels, datasets: [{label, data}]}}; "
    "Vega-Lite {mark, data: {values: [...]}, encoding: {x: {field}, y: {field}}}; "
    "Plotly {data: [{type, x, y, name}], layout: {title}}; "
    'a table {labels: [...], values: [...]} or rows [{"label": ..., "value": ...}]'
)
"""One-line summary of the chart spec shapes accepted."""

_LABEL_KEYS: Final = ("label", "name", "category", "x", "key", "group")
_VALUE_KEYS: Final = ("value", "y", "count", "amount", "total", "size")


def _fail(dialect: str, message: str) -> InvalidInput:
    return InvalidInput(f"chart spec ({dialect}): {message}")


def chart_kind(value: object, dialect: str = "docbinder") -> str:
    """The chart kind named by ``value``: ``bar``, ``line`` or ``pie``.

    Case, spaces, ``-``/``_`` and a trailing ``chart``/``graph``/``plot`` are
    ignored and :data:`CHART_KIND_SYNONYMS` apply: ``"Column Chart"`` and
    ``"bar-chart"`` give ``bar``, ``"doughnut"`` gives ``pie``. Raises
    :class:`InvalidInput` (``chart spec: 'kind' ...``) for other values.
    """
    if isinstance(value, str):
        word = re.sub(r"[\s_\-]+", "", value.strip().lower())
        word = _NOISE_WORDS_RE.sub("", word) or word
        if word in CHART_KIND_SYNONYMS:
            return CHART_KIND_SYNONYMS[word]
    where = "chart spec" if dialect == "docbinder" else f"chart spec ({dialect})"
    raise InvalidInput(
        f"{where}: 'kind' must be one of bar, line, pie, got {value!r}; "
        f'accepted: {ACCEPTED_KINDS}; example: "kind": "bar"'
    )


def _text(value: object) -> str | None:
    """A title from a string, a list of lines, or an object with ``text``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return " ".join(value)
    if isinstance(value, Mapping):
        return _text(value.get("text"))
    return None


def _get(mapping: object, *path: str | int) -> Any:
    current: Any = mapping
    for step in path:
        if isinstance(step, int):
            if not isinstance(current, list) or len(current) <= step:
                return None
            current = current[step]
        elif isinstance(current, Mapping):
            current = current.get(step)
        else:
            return None
    return current


def _spec(
    kind: str,
    series: list[dict[str, Any]],
    *,
    title: object = None,
    x: object = None,
    y: object = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": kind, "series": series}
    for key, value in (("title", title), ("x_label", x), ("y_label", y)):
        text = _text(value)
        if text:
            spec[key] = text
    return spec


def to_docbinder_spec(spec: object) -> tuple[str, object]:
    """``(dialect, spec in docbinder's shape)`` for a chart spec in any accepted dialect.

    ``spec`` is a dict or list, or JSON text of one (whitespace and a code
    fence around it are removed). The dialect is ``docbinder``, ``Chart.js``,
    ``Vega-Lite``, ``Plotly`` or ``table``. A docbinder spec is returned as
    given (apart from the key synonyms in the module documentation), so that
    its validation reports the original keys. Raises :class:`InvalidInput`.
    """
    if isinstance(spec, str):
        text = strip_fence(spec)
        try:
            spec = load_json(text)
        except ValueError as exc:
            raise InvalidInput(
                f"chart spec: not valid JSON ({exc}); got {preview(spec)}; "
                f"accepted: a JSON object such as {DOCBINDER_EXAMPLE}"
            ) from exc
    if isinstance(spec, list):
        if spec and all(isinstance(t, Mapping) for t in spec) and _looks_like_traces(spec):
            return "Plotly", _plotly(spec, None)
        return "table", _table({"data": spec})
    if not isinstance(spec, Mapping):
        raise _unrecognised(spec)
    data = spec.get("data")
    if "series" in spec:
        return "docbinder", _docbinder(spec)
    if isinstance(data, Mapping) and "datasets" in data:
        return "Chart.js", _chartjs(spec)
    if "mark" in spec or "encoding" in spec:
        return "Vega-Lite", _vega_lite(spec)
    if isinstance(data, list) and data and _looks_like_traces(data):
        return "Plotly", _plotly(data, spec.get("layout"))
    if "labels" in spec or "values" in spec or "rows" in spec or data is not None:
        return "table", _table(spec)
    if spec and all(_is_number(value) for value in spec.values()):
        return "table", _table({"data": spec})
    raise _unrecognised(spec)


def _unrecognised(spec: object) -> InvalidInput:
    keys = f" with keys {', '.join(map(repr, spec))}" if isinstance(spec, Mapping) else ""
    return InvalidInput(
        f"chart spec: got {preview(spec)}{keys}, which is no chart spec shape known; "
        f"accepted: {ACCEPTED_CHART_SHAPES}; example: {DOCBINDER_EXAMPLE}"
    )


def _looks_like_traces(items: Sequence[object]) -> bool:
    return any(
        isinstance(item, Mapping)
        and any(isinstance(item.get(key), list) for key in ("x", "y", "values", "labels"))
        for item in items
    )


def _docbinder(spec: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(spec)
    for synonym in ("type", "chart_type", "chartType"):
        if synonym in result:
            if "kind" in result:
                raise InvalidInput(
                    f"chart spec: both 'kind' and {synonym!r} are given "
                    f"({result['kind']!r}, {result[synonym]!r}); accepted: one of them; "
                    f'example: "kind": "bar"'
                )
            result["kind"] = result.pop(synonym)
    if "kind" in result:
        result["kind"] = chart_kind(result["kind"])
    series = result.get("series")
    if isinstance(series, Mapping):
        series = [series]
    if isinstance(series, list):
        fixed: list[object] = []
        for item in series:
            if isinstance(item, Mapping):
                item = dict(item)
                if "data" in item and "values" not in item:
                    item["values"] = item.pop("data")
                if "label" in item and "name" not in item:
                    item["name"] = item.pop("label")
            fixed.append(item)
        result["series"] = fixed
    return result


def _name(value: object, index: int) -> str:
    return value if isinstance(value, str) else f"series {index + 1}"


def _chartjs(spec: Mapping[str, Any]) -> dict[str, Any]:
    dialect = "Chart.js"
    raw_kind = spec.get("type")
    datasets = _get(spec, "data", "datasets")
    if raw_kind is None and isinstance(datasets, list) and datasets:
        raw_kind = _get(datasets, 0, "type")
    if raw_kind is None:
        raise _fail(
            dialect, f"'type' is missing; accepted: {ACCEPTED_KINDS}; example: {CHARTJS_EXAMPLE}"
        )
    kind = chart_kind(raw_kind, dialect)
    if not isinstance(datasets, list) or not datasets:
        raise _fail(
            dialect,
            f"'data.datasets' must be a non-empty list, got {preview(datasets)}; "
            f"example: {CHARTJS_EXAMPLE}",
        )
    labels = _get(spec, "data", "labels")
    series: list[dict[str, Any]] = []
    for index, dataset in enumerate(datasets):
        if not isinstance(dataset, Mapping):
            raise _fail(
                dialect,
                f"data.datasets[{index}] must be an object with 'label' and 'data', "
                f"got {preview(dataset)}; example: {CHARTJS_EXAMPLE}",
            )
        points = dataset.get("data")
        if isinstance(points, Mapping) and points:
            series.append(
                {
                    "name": _name(dataset.get("label"), index),
                    "labels": list(points),
                    "values": list(points.values()),
                }
            )
            continue
        if not isinstance(points, list):
            raise _fail(
                dialect,
                f"data.datasets[{index}].data must be a list of numbers, got {preview(points)}; "
                f"example: {CHARTJS_EXAMPLE}",
            )
        own_labels = labels
        values: list[object] = list(points)
        if points and all(isinstance(p, Mapping) for p in points):
            own_labels = [p.get("x", p.get("label")) for p in points]
            values = [p.get("y", p.get("value")) for p in points]
        if not isinstance(own_labels, list):
            raise _fail(
                dialect,
                f"'data.labels' must be a list of labels, got {preview(own_labels)}; "
                f"example: {CHARTJS_EXAMPLE}",
            )
        series.append(
            {
                "name": _name(dataset.get("label"), index),
                "labels": list(own_labels),
                "values": values,
            }
        )
    options = spec.get("options")
    title = _get(options, "plugins", "title", "text") or _get(options, "title", "text")
    title = title or spec.get("title")
    x_label = _get(options, "scales", "x", "title", "text") or _get(
        options, "scales", "xAxes", 0, "scaleLabel", "labelString"
    )
    y_label = _get(options, "scales", "y", "title", "text") or _get(
        options, "scales", "yAxes", 0, "scaleLabel", "labelString"
    )
    if kind == "pie":
        x_label = y_label = None
    return _spec(kind, series, title=title, x=x_label, y=y_label)


def _field(channel: object) -> str | None:
    field = _get(channel, "field")
    return field if isinstance(field, str) else None


def _vega_lite(spec: Mapping[str, Any]) -> dict[str, Any]:
    dialect = "Vega-Lite"
    mark = spec.get("mark")
    raw_kind = mark.get("type") if isinstance(mark, Mapping) else mark
    kind = chart_kind(raw_kind, dialect)
    records = spec.get("data")
    records = records if isinstance(records, list) else _get(records, "values")
    if (
        not isinstance(records, list)
        or not records
        or not all(isinstance(r, Mapping) for r in records)
    ):
        raise _fail(
            dialect,
            f"'data.values' must be a non-empty list of records (inline data; 'data.url' is "
            f"not fetched), got {preview(spec.get('data'))}; example: {VEGA_LITE_EXAMPLE}",
        )
    encoding = spec.get("encoding")
    if not isinstance(encoding, Mapping):
        raise _fail(
            dialect,
            f"'encoding' must be an object, got {preview(encoding)}; example: {VEGA_LITE_EXAMPLE}",
        )
    for channel_name, channel in encoding.items():
        if isinstance(channel, Mapping) and channel.get("aggregate") not in (None, ""):
            raise _fail(
                dialect,
                f"encoding.{channel_name}.aggregate {channel['aggregate']!r} is not computed; "
                f"accepted: one record per point with the value already computed; "
                f"example: {VEGA_LITE_EXAMPLE}",
            )
    title = spec.get("title")
    if kind == "pie":
        value_field = _field(encoding.get("theta"))
        label_field = _field(encoding.get("color"))
        if not value_field or not label_field:
            raise _fail(
                dialect,
                "an arc (pie) needs encoding.theta.field (the values) and encoding.color.field "
                f"(the labels), got {preview(dict(encoding))}; example: "
                '{"mark": "arc", "data": {"values": [{"k": "A", "v": 3}]}, '
                '"encoding": {"theta": {"field": "v"}, "color": {"field": "k"}}}',
            )
        series = [_column_series(records, label_field, value_field, label_field, dialect)]
        return _spec(kind, series, title=title)
    x, y = encoding.get("x"), encoding.get("y")
    x_field, y_field = _field(x), _field(y)
    if not x_field or not y_field:
        raise _fail(
            dialect,
            f"encoding.x.field and encoding.y.field are needed, got {preview(dict(encoding))}; "
            f"example: {VEGA_LITE_EXAMPLE}",
        )
    label_channel, value_channel = x, y
    if _get(x, "type") == "quantitative" and _get(y, "type") in ("nominal", "ordinal"):
        label_channel, value_channel = y, x
    label_field, value_field = _field(label_channel), _field(value_channel)
    assert label_field is not None and value_field is not None
    color_field = _field(encoding.get("color"))
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        key = str(record.get(color_field, value_field)) if color_field else value_field
        groups.setdefault(key, []).append(record)
    series = [
        _column_series(rows, label_field, value_field, name, dialect)
        for name, rows in groups.items()
    ]
    x_title = _get(label_channel, "title") or _get(label_channel, "axis", "title") or label_field
    y_title = _get(value_channel, "title") or _get(value_channel, "axis", "title") or value_field
    return _spec(kind, series, title=title, x=x_title, y=y_title)


def _column_series(
    records: Sequence[Mapping[str, Any]],
    label_field: str,
    value_field: str,
    name: str,
    dialect: str,
) -> dict[str, Any]:
    for index, record in enumerate(records):
        for field in (label_field, value_field):
            if field not in record:
                raise _fail(
                    dialect,
                    f"record {index + 1} has no field {field!r}, got {preview(dict(record))}",
                )
    return {
        "name": name,
        "labels": [record[label_field] for record in records],
        "values": [record[value_field] for record in records],
    }


def _plotly(traces: Sequence[Any], layout: object) -> dict[str, Any]:
    dialect = "Plotly"
    kinds: list[str] = []
    series: list[dict[str, Any]] = []
    for index, trace in enumerate(traces):
        if not isinstance(trace, Mapping):
            raise _fail(dialect, f"data[{index}] must be a trace object, got {preview(trace)}")
        raw = trace.get("type", "scatter")
        mode = trace.get("mode")
        if isinstance(raw, str) and raw.strip().lower() in ("scatter", "scattergl"):
            if isinstance(mode, str) and "lines" not in mode:
                raise _fail(
                    dialect,
                    f"data[{index}] is a scatter plot of {mode!r} without lines, which is not "
                    f'drawn; accepted: {ACCEPTED_KINDS}; example: {{"type": "scatter", '
                    f'"mode": "lines", "x": [...], "y": [...]}}',
                )
            raw = "line"
        kind = chart_kind(raw, dialect)
        kinds.append(kind)
        name = trace.get("name")
        name = name if isinstance(name, str) else f"series {index + 1}"
        if kind == "pie":
            labels, values = trace.get("labels"), trace.get("values")
        elif trace.get("orientation") == "h":
            labels, values = trace.get("y"), trace.get("x")
        else:
            labels, values = trace.get("x"), trace.get("y")
        if not isinstance(values, list) or not isinstance(labels, list):
            wanted = "labels and values" if kind == "pie" else "x and y"
            raise _fail(
                dialect,
                f"data[{index}] needs {wanted} as lists, got {preview(dict(trace))}; "
                f"example: {PLOTLY_EXAMPLE}",
            )
        series.append({"name": name, "labels": labels, "values": values})
    if len(set(kinds)) > 1:
        raise _fail(
            dialect,
            f"the traces mix chart kinds ({', '.join(kinds)}); accepted: traces of one kind; "
            f"example: {PLOTLY_EXAMPLE}",
        )
    x_label = _get(layout, "xaxis", "title")
    y_label = _get(layout, "yaxis", "title")
    if kinds[0] == "pie":
        x_label = y_label = None
    return _spec(kinds[0], series, title=_get(layout, "title"), x=x_label, y=y_label)


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        try:
            float(value.replace(",", "").strip())
        except ValueError:
            return False
        return True
    return False


def _table(spec: Mapping[str, Any]) -> dict[str, Any]:
    dialect = "table"
    raw_kind = spec.get("kind", spec.get("type", spec.get("chart_type", "bar")))
    kind = chart_kind(raw_kind, dialect)
    name: str = "values"
    for candidate in (spec.get("name"), spec.get("series_name"), spec.get("title")):
        if isinstance(candidate, str) and candidate.strip():
            name = candidate
            break
    extras = {"title": spec.get("title"), "x": spec.get("x_label"), "y": spec.get("y_label")}
    if kind == "pie":
        extras["x"] = extras["y"] = None
    if "labels" in spec or "values" in spec:
        labels, values = spec.get("labels"), spec.get("values")
        data = spec.get("data")
        if values is None and isinstance(data, list) and all(_is_number(v) for v in data):
            values = data
        if not isinstance(labels, list) or not isinstance(values, list):
            raise _fail(
                dialect,
                f"'labels' and 'values' must both be lists, got labels={preview(labels)}, "
                f"values={preview(values)}; example: {TABLE_EXAMPLE}",
            )
        return _spec(kind, [{"name": name, "labels": labels, "values": values}], **extras)
    rows = spec.get("rows", spec.get("data"))
    if isinstance(rows, Mapping) and ("labels" in rows or "values" in rows):
        return _table({**spec, "data": None, **rows})
    if isinstance(rows, Mapping) and rows and all(_is_number(v) for v in rows.values()):
        series = [{"name": name, "labels": list(rows), "values": list(rows.values())}]
        return _spec(kind, series, **extras)
    if isinstance(rows, list) and rows:
        if all(isinstance(r, list | tuple) and len(r) == 2 for r in rows):
            series = [
                {"name": name, "labels": [r[0] for r in rows], "values": [r[1] for r in rows]}
            ]
            return _spec(kind, series, **extras)
        if all(isinstance(r, Mapping) for r in rows):
            return _spec(kind, _record_series(rows, name), **extras)
    raise _fail(
        dialect,
        f"got {preview(rows if rows is not None else dict(spec))}; accepted: "
        '{"labels": [...], "values": [...]}, rows [{"label": "North", "value": 61}], '
        '[["North", 61]] pairs, records [{"region": "North", "2026": 61}] or '
        f'{{"North": 61}}; example: {TABLE_EXAMPLE}',
    )


def _record_series(rows: Sequence[Mapping[str, Any]], default_name: str) -> list[dict[str, Any]]:
    keys: list[str] = []
    for row in rows:
        keys.extend(str(k) for k in row if str(k) not in keys)
    if not keys:
        raise _fail(
            "table",
            f"the rows have no columns, got {preview(list(rows))}; example: {TABLE_EXAMPLE}",
        )
    lowered = {key.lower(): key for key in keys}
    label_key = next((lowered[k] for k in _LABEL_KEYS if k in lowered), None)
    if label_key is None:
        label_key = next(
            (k for k in keys if any(not _is_number(row.get(k)) for row in rows)), keys[0]
        )
    value_keys = [lowered[k] for k in _VALUE_KEYS if k in lowered and lowered[k] != label_key][:1]
    if not value_keys:
        value_keys = [k for k in keys if k != label_key]
    if not value_keys:
        raise _fail(
            "table",
            f"the rows have no value column besides {label_key!r}; example: {TABLE_EXAMPLE}",
        )
    series = []
    for key in value_keys:
        missing = [i + 1 for i, row in enumerate(rows) if key not in row]
        if missing:
            raise _fail(
                "table",
                f"row {missing[0]} has no {key!r}, got {preview(dict(rows[missing[0] - 1]))}",
            )
        name = default_name if len(value_keys) == 1 and key.lower() in _VALUE_KEYS else key
        series.append(
            {
                "name": name,
                "labels": [row.get(label_key) for row in rows],
                "values": [row[key] for row in rows],
            }
        )
    return series
