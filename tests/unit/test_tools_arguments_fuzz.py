"""Property tests for the tolerant tool arguments: any JSON-like value a model may send is
either used or refused with :class:`InvalidInput` in the documented form, never another error.

``DOCBINDER_FUZZ_EXAMPLES`` sets the number of examples per property (default 300).
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docbinder.domain.errors import InvalidInput
from docbinder.tools.arguments import (
    BINARY_TYPES,
    coerce_bool,
    coerce_choices,
    coerce_file_content,
    coerce_file_name,
    coerce_int,
)
from docbinder.tools.charts import parse_chart_spec

FUZZ = settings(
    max_examples=int(os.environ.get("DOCBINDER_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

KEYS = st.sampled_from(
    [
        "kind", "type", "title", "series", "labels", "values", "data", "datasets", "label",
        "mark", "encoding", "x", "y", "field", "layout", "name", "theta", "color", "rows",
        "options", "value", "mode", "orientation", "text",
    ]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["bar", "pie", "line", "doughnut", "arc", "scatter", "61", "x", "markers"]),
)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=40,
)
EXTENSIONS = st.sampled_from(
    [".json", ".jsonl", ".csv", ".tsv", ".md", ".txt", ".py", "", *BINARY_TYPES]
)


@FUZZ
@given(JSONISH)
def test_chart_specs_are_used_or_refused_with_a_chart_spec_message(spec: object) -> None:
    for candidate in (spec, json.dumps(spec, allow_nan=True)):
        try:
            chart = parse_chart_spec(candidate)
        except InvalidInput as exc:
            assert str(exc).startswith("chart spec")
        else:
            assert chart.kind in ("bar", "line", "pie")
            assert all(len(s.labels) == len(s.values) for s in chart.series)


@FUZZ
@given(EXTENSIONS, st.one_of(JSONISH, st.binary(max_size=40)))
def test_file_content_is_bytes_or_refused(extension: str, content: object) -> None:
    name = f"file{extension}"
    try:
        written = coerce_file_content(name, content)
    except InvalidInput as exc:
        assert str(exc).startswith("the content for")
        assert "; accepted: " in str(exc)
    else:
        assert isinstance(written.data, bytes)
        binary = BINARY_TYPES.get(extension)
        if binary is not None:
            assert binary.matches(written.data)


@FUZZ
@given(JSONISH)
def test_scalar_coercions_refuse_in_one_form(value: object) -> None:
    for coerce in (
        lambda v: coerce_bool(v, "the flag"),
        lambda v: coerce_int(v, "n", minimum=1, maximum=10),
        lambda v: coerce_choices(v, "the formats", ("html", "pdf"), example='"pdf"'),
        lambda v: coerce_file_name(v, example="a.txt"),
    ):
        try:
            coerce(value)
        except InvalidInput as exc:
            assert "; accepted: " in str(exc) and "; example: " in str(exc)
