"""What reaches each host's model from docbinder's MCP server, through that host's own MCP client.

One rendering test per host: its driver runs the host's real agent loop with
the framework's own scripted model against ``docbinder mcp`` (a new home,
docbinder's own interpreter), and the facts of what the model received are
compared with the host's table in :mod:`tests.hosts.expectations` for the
server era it asserts (the server with workflow handles); in the era before
them, the failures the handles fixed were strict xfails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.expectations import (
    EXPECTATIONS,
    MATRIX_BEGIN,
    MATRIX_END,
    MATRIX_PAGE,
    SERVER_ERA,
    expected,
    gaps,
    render_matrix,
)
from tests.hosts.harness import HOSTS, facts, server_has_handles
from tests.hosts.venvs import HOSTS as VENVS

ROOT = Path(__file__).resolve().parents[2]


def _shown(report: dict[str, Any]) -> str:
    """The steps as the model saw them, for a failure message."""
    lines = []
    for step, result in zip(report["steps"], report["wire"], strict=True):
        lines.append(f"-- {step['tool']} {json.dumps(step['arguments'])[:160]}")
        lines.append(f"   model saw: {json.dumps(step['view'])[:1500]}")
        lines.append(f"   server sent: {json.dumps(result)[:800]}")
    return "\n".join(lines)


def _check_era(report: dict[str, Any]) -> None:
    has_handles = server_has_handles(report.get("tools") or [])
    if has_handles != (SERVER_ERA == "handles"):
        pytest.fail(
            f"the server {'has' if has_handles else 'has no'} workflow handles / outputSchema but "
            f"tests/hosts/expectations.py asserts SERVER_ERA={SERVER_ERA!r}: switch it",
            pytrace=False,
        )


@pytest.mark.parametrize("host", [h.name for h in HOSTS])
def test_what_reaches_the_model(host: str, host_runs: Any) -> None:
    report = host_runs.report(host)
    _check_era(report)
    got = facts(report)
    cells = EXPECTATIONS[host]
    want = {
        key: value
        for key, value in expected(host).items()
        if not (SERVER_ERA == "sessions" and cells[key].gap)
    }
    wrong = {key: (got[key], value) for key, value in want.items() if got[key] != value}
    assert not wrong, (
        f"{host}: cell: (got, expected): {wrong}\n{_shown(report)}\nversions: {report['versions']}"
    )


if gaps():

    @pytest.mark.parametrize(
        ("host", "cell"),
        [
            pytest.param(
                host, key, marks=pytest.mark.xfail(strict=True, reason=c.gap), id=f"{host}-{key}"
            )
            for host, key, c in gaps()
        ],
    )
    def test_known_gap_of_the_sessions_server(host: str, cell: str, host_runs: Any) -> None:
        got = facts(host_runs.report(host))[cell]
        assert got == EXPECTATIONS[host][cell].then


def test_every_host_venv_is_used_and_every_host_has_a_table() -> None:
    assert {h.venv for h in HOSTS} - {None} == set(VENVS)
    assert set(EXPECTATIONS) == {h.name for h in HOSTS}


def test_the_mcp_guides_matrix_is_the_expectation_table() -> None:
    guide = (ROOT / MATRIX_PAGE).read_text(encoding="utf-8")
    start, end = guide.index(MATRIX_BEGIN), guide.index(MATRIX_END) + len(MATRIX_END)
    assert guide[start:end] == render_matrix(), "run python -m tests.hosts.expectations"
