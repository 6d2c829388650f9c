"""The inspector page in a real browser: the OS's headless Chromium driven by Playwright.

One real workflow (a chart image, a table, a text, a PDF, and the resolutions a model
sent, one of them with misses) is served by ``docbinder serve``'s app under uvicorn; the
browser signs in through a one-time link, which sets an HttpOnly cookie, and reads the
page as a person would. Screenshots are kept under ``DOCBINDER_TEST_ARTIFACTS`` (or the
test's temporary directory). Without Chromium the tests skip locally and fail with
``CI=true`` (``.ci/run`` installs the ``chromium`` package).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import documents
from tests.conftest import backend_unavailable
from tests.integration.http_live import auth, live_app, memory_binder
from tests.unit.test_tools_fixtures import png_bytes

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


@pytest.fixture
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        backend_unavailable("playwright", str(exc))
    if not Path(CHROMIUM).exists():
        backend_unavailable("chromium", "no chromium executable (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    where = Path(os.environ.get("DOCBINDER_TEST_ARTIFACTS") or tmp_path / "artifacts")
    where.mkdir(parents=True, exist_ok=True)
    return where


def _workflow(live: Any) -> dict[str, Any]:
    """A workflow as an agent run leaves it: four documents and two resolutions."""
    client = live.client
    workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
    uploads = {
        "revenue-chart.png": png_bytes((30, 90, 200), size=64),
        "sales.csv": b"region,q1,q2\nnorth,10,14\nsouth,12,9\neast,7,11\n",
        "summary.md": b"# Summary\n\nRevenue grew 12% in the north.\nThe south needs a plan.\n",
        "report.pdf": documents.shared_stream_pdf(pages=3, stream_repeats=1),
    }
    stored = {}
    for name, data in uploads.items():
        response = client.post(
            f"/v1/workflows/{workflow}/files",
            params={"name": name, "label": f"writeFile:{name}"},
            content=data,
            headers=auth("alice"),
        )
        assert response.status_code == 201, response.text
        stored[name] = response.json()
    refs = [s["documentRef"] for s in stored.values()]
    client.post(
        f"/v1/workflows/{workflow}/resolve",
        json={"documentList": refs[:2]},
        headers=auth("alice"),
    )
    client.post(
        f"/v1/workflows/{workflow}/resolve",
        json={"documentList": f"use {refs[2]} and docItem:report.pdf and docList:nothing-here"},
        headers=auth("alice"),
    )
    return {"id": workflow, "stored": stored}


def test_the_inspector_shows_a_real_workflow_to_a_signed_in_browser(
    browser: Any, artifacts: Path
) -> None:
    with live_app(memory_binder()) as live:
        workflow = _workflow(live)
        signin = live.client.post(
            "/v1/ui/signin", json={"workflowId": workflow["id"]}, headers=auth("alice")
        ).json()["url"]
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        response = page.goto(signin)
        assert response is not None and response.status == 200
        assert page.url == f"{live.url}/ui/workflows/{workflow['id']}"  # the code left the URL
        page.screenshot(path=str(artifacts / "inspector-workflow.png"), full_page=True)

        # Messages in order, each document with its reference, name, type and size.
        labels = page.locator(".message .label").all_inner_texts()
        assert labels == [f"writeFile:{name}" for name in workflow["stored"]]
        text = page.inner_text("body")
        for name, stored in workflow["stored"].items():
            assert stored["documentRef"] in text
            assert f"{name}" in text and f"{stored['size']} bytes" in text
        assert "round 1 / task 0 / action 0" in text
        # Previews: the image is loaded, the table's cells, the text's first lines, PDF pages.
        image = page.locator(".preview img")
        assert image.count() == 1
        assert image.evaluate("img => img.complete && img.naturalWidth") == 64
        assert page.locator(".preview table td").all_inner_texts()[:3] == ["region", "q1", "q2"]
        assert "Revenue grew 12% in the north." in page.inner_text(".preview pre")
        assert "PDF, 3 pages" in text
        # Recent resolutions, newest first: what was sent, what resolved, each miss and why.
        rows = page.locator("tr.resolution")
        assert rows.count() == 2
        newest = rows.nth(0).inner_text()
        assert "docItem:report.pdf" in newest and "not_in_workflow" in newest
        assert "docList:nothing-here" in newest
        assert workflow["stored"]["summary.md"]["documentRef"] in newest
        assert "none" in rows.nth(1).locator("td").nth(3).inner_text()
        # No script on the page, and the session cookie is out of the page's reach.
        assert page.locator("script").count() == 0
        assert page.evaluate("document.cookie") == ""
        (cookie,) = context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (
            "docbinder_ui",
            True,
            "Strict",
        )
        # The download link gives the file's bytes to the signed-in browser.
        with page.expect_download() as info:
            page.locator(".doc a[download]").nth(1).click()
        saved = artifacts / "downloaded-sales.csv"
        info.value.save_as(saved)
        assert saved.read_bytes().startswith(b"region,q1,q2")

        # The sign-in link works once; a browser without the cookie sees no workflow.
        second = browser.new_context().new_page()
        again = second.goto(signin)
        assert again is not None and again.status == 403
        assert "used already" in second.inner_text("body")
        stranger = second.goto(f"{live.url}/ui/workflows/{workflow['id']}")
        assert stranger is not None and stranger.status == 401
        second.screenshot(path=str(artifacts / "inspector-signed-out.png"))
        context.close()

    assert (artifacts / "inspector-workflow.png").stat().st_size > 10_000


def test_another_tenants_workflow_is_not_found_in_the_inspector(browser: Any) -> None:
    with live_app(memory_binder()) as live:
        workflow = _workflow(live)
        signin = live.client.post("/v1/ui/signin", json={}, headers=auth("mallory")).json()["url"]
        page = browser.new_context().new_page()
        page.goto(signin)
        theirs = page.goto(f"{live.url}/ui/workflows/{workflow['id']}")
        assert theirs is not None and theirs.status == 404
        nobodys = page.goto(f"{live.url}/ui/workflows/00000000-0000-4000-8000-000000000000")
        assert nobodys is not None and nobodys.status == 404
        file_id = workflow["stored"]["sales.csv"]["fileId"]
        download = page.request.get(f"{live.url}/ui/files/{file_id}/content")
        assert download.status == 404


def test_a_utf8_text_file_reads_right_in_the_browser_by_its_link(browser: Any) -> None:
    """Text is sent with ``charset=utf-8``: without it a browser reads ``Zürich`` as ``ZÃ¼rich``."""
    with live_app(memory_binder()) as live:
        client = live.client
        workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
        for name, text in (
            ("gruss.txt", "Grüße aus Zürich, 東京 und Αθήνα\n"),
            ("städte.json", '{"Zürich": "Grüße", "東京": 1}'),
        ):
            file_id = client.post(
                f"/v1/workflows/{workflow}/files",
                params={"name": name},
                content=text.encode(),
                headers=auth("alice"),
            ).json()["fileId"]
            url = client.post(
                f"/v1/files/{file_id}/links", json={"expiresIn": "10m"}, headers=auth("alice")
            ).json()["url"]
            page = browser.new_context().new_page()
            response = page.goto(url)
            assert response is not None and response.status == 200
            assert response.headers["content-type"].endswith("; charset=utf-8")
            assert page.inner_text("body").strip() == text.strip()
