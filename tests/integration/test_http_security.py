"""``docbinder serve`` under attack: other tenants' ids, hostile file names, HTML that would run,
unauthenticated requests, foreign Host headers, non-loopback binds without authentication."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from docbinder.domain.errors import ConfigurationError
from docbinder.integrations.http import FixedIdentity, build_app
from tests.integration.http_live import ALICE, auth, live_app, memory_binder

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def live() -> Iterator[Any]:
    with live_app(memory_binder()) as running:
        yield running


@pytest.fixture
def alices(live: Any) -> dict[str, str]:
    """Alice's workflow, file and document ids in mandate ``acme``."""
    client = live.client
    workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
    stored = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "secret.txt"},
        content=b"acme's secret",
        headers=auth("alice"),
    ).json()
    return {"workflow": workflow, "file": stored["fileId"], "document": stored["documentId"]}


def _routes(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route that takes an id, with the ids of ``ids``."""
    w, f = ids["workflow"], ids["file"]
    return [
        ("GET", f"/v1/workflows/{w}", {}),
        ("POST", f"/v1/workflows/{w}/files?name=x.txt", {"content": b"x"}),
        (
            "POST",
            f"/v1/workflows/{w}/resolve",
            {"json": {"documentList": f"docItem:{ids['document']}"}},
        ),
        ("GET", f"/v1/files/{f}", {}),
        ("GET", f"/v1/files/{f}/content", {}),
        ("GET", f"/v1/files/{f}/content?download=1", {"headers": {"range": "bytes=0-3"}}),
        ("GET", f"/v1/files/{f}/content", {"headers": {"range": "bytes=0-0,2-3"}}),
        ("GET", f"/v1/files/{f}/content", {"headers": {"range": "bytes=-2"}}),
        ("POST", f"/v1/files/{f}/links", {"json": {"expiresIn": 60}}),
    ]


def _answer(response: httpx.Response) -> tuple[int, str, list[str]]:
    """Status, body with every id replaced, and the header names: what a caller can compare."""
    return (
        response.status_code,
        _ID.sub("<id>", response.text),
        sorted(k for k in response.headers if k not in {"date", "content-length"}),
    )


def test_another_tenants_ids_answer_exactly_like_unknown_ids_on_every_route(
    live: Any, alices: dict[str, str]
) -> None:
    client = live.client
    unknown = {k: str(uuid.uuid4()) for k in alices}
    # Mallory's own workflow: resolving Alice's document there is "not in workflow" too.
    for (method, theirs, options), (_, nobodys, _) in zip(
        _routes(alices), _routes(unknown), strict=True
    ):
        headers = {**auth("mallory"), **options.get("headers", {})}
        rest = {k: v for k, v in options.items() if k != "headers"}
        foreign = client.request(method, theirs, headers=headers, **rest)
        missing = client.request(method, nobodys, headers=headers, **rest)
        assert foreign.status_code in (404,), (theirs, foreign.text)
        assert _answer(foreign) == _answer(missing), theirs
    # And Alice's own requests do work, so the ids were real.
    for method, path, options in _routes(alices):
        headers = {**auth("alice"), **options.get("headers", {})}
        rest = {k: v for k, v in options.items() if k != "headers"}
        assert client.request(method, path, headers=headers, **rest).status_code < 300, path
    mallorys = client.post("/v1/workflows", headers=auth("mallory")).json()["id"]
    resolved = client.post(
        f"/v1/workflows/{mallorys}/resolve",
        json={"documentList": [f"docItem:{alices['document']}", f"file:{alices['file']}"]},
        headers=auth("mallory"),
    ).json()
    assert resolved["documents"] == []
    assert {u["reason"] for u in resolved["unresolved"]} == {"not_in_workflow"}


def test_every_api_route_needs_credentials(live: Any, alices: dict[str, str]) -> None:
    client = live.client
    for method, path, options in _routes(alices):
        rest = {k: v for k, v in options.items() if k != "headers"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic eDp5"}):
            response = client.request(method, path, headers=headers, **rest)
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"].startswith("Bearer")
    assert client.post("/v1/workflows").status_code == 401
    assert client.get("/v1/health").json() == {"status": "ok"}


HOSTILE_NAMES = [
    'evil"; filename="evil.exe',
    "report.pdf\r\nSet-Cookie: session=stolen",
    "../../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "naïve résumé 履歴書.txt",
    "\u202etxt.exe",
    "semi;colon,comma 'quote'.txt",
    "%2e%2e%2fescaped.txt",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_file_name_can_neither_inject_headers_nor_name_a_path(live: Any, name: str) -> None:
    client = live.client
    workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
    stored = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": name},
        content=b"payload",
        headers=auth("alice"),
    )
    if stored.status_code == 400:  # the library refuses names with control characters
        assert "\r" in name or "\n" in name
        assert "set-cookie" not in {k.lower() for k in stored.headers}
        return
    assert stored.status_code == 201, stored.text
    body = stored.json()
    response = client.get(f"/v1/files/{body['fileId']}/content", headers=auth("alice"))
    assert response.status_code == 200 and response.content == b"payload"
    assert "set-cookie" not in response.headers
    dispositions = response.headers.get_list("content-disposition")
    assert len(dispositions) == 1
    (value,) = dispositions
    assert "\r" not in value and "\n" not in value
    match = re.fullmatch(
        r'(inline|attachment); filename="([^"\\]*)"; filename\*=UTF-8\'\'(\S+)', value
    )
    assert match is not None, value
    fallback, encoded = match.group(2), match.group(3)
    assert fallback.isascii() and not set(fallback) & set(';,/\\"')
    assert unquote(encoded) == body["fileName"]
    assert not set(encoded) & set(" ;,\"'\\")


@pytest.mark.parametrize(
    ("name", "data", "declared"),
    [
        ("page.html", b"<html><script>fetch('/v1/workflows')</script></html>", None),
        (
            "drawing.svg",
            b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
            None,
        ),
        (
            "feed.xml",
            b"<?xml version='1.0'?><x:script xmlns:x='http://www.w3.org/1999/xhtml'>alert(1)</x:script>",
            None,
        ),
        ("innocent.txt", b"<!doctype html><script>alert(document.cookie)</script>", "text/html"),
    ],
)
def test_content_a_browser_would_run_never_runs_in_the_services_origin(
    live: Any, name: str, data: bytes, declared: str | None
) -> None:
    client = live.client
    workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
    headers = {**auth("alice"), **({"content-type": declared} if declared else {})}
    file_id = client.post(
        f"/v1/workflows/{workflow}/files", params={"name": name}, content=data, headers=headers
    ).json()["fileId"]
    response = client.get(f"/v1/files/{file_id}/content", headers=auth("alice"))
    assert response.content == data
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"].startswith("sandbox")
    mime = response.headers["content-type"]
    if any(t in mime for t in ("html", "svg", "xml")):
        assert response.headers["content-disposition"].startswith("attachment")


def test_a_foreign_host_header_is_refused_before_authentication(live: Any) -> None:
    response = live.client.post(
        "/v1/workflows", headers={**auth("alice"), "host": f"evil.example:{live.port}"}
    )
    assert response.status_code == 421
    from_evil = live.client.post(
        "/v1/workflows", headers={**auth("alice"), "origin": "http://evil.example"}
    )
    assert from_evil.status_code == 403


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "files.example.com"])
def test_a_non_loopback_bind_without_authentication_is_refused(host: str) -> None:
    with pytest.raises(ConfigurationError, match="without authentication"):
        build_app(memory_binder(), FixedIdentity(ALICE), host=host, port=8080)


@pytest.mark.parametrize(
    "bad_id",
    ["..%2F..%2Fetc%2Fpasswd", "%2e%2e", "a%00b", "x" * 5000, "%E2%80%AE", "docItem:abc", "*"],
)
def test_hostile_ids_in_the_path_answer_like_unknown_ids(live: Any, bad_id: str) -> None:
    client = live.client
    for path in (
        f"/v1/files/{bad_id}",
        f"/v1/files/{bad_id}/content",
        f"/v1/workflows/{bad_id}",
    ):
        response = client.get(path, headers=auth("alice"))
        assert response.status_code == 404, (path, response.text)
        assert response.json()["error"]["code"] == "not_found"
    link = client.get(f"/v1/links/{bad_id}")
    assert link.status_code in (403, 404)
    if link.status_code == 403:
        assert link.json()["error"]["code"] == "tampered"
