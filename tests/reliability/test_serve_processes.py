"""Two ``docbinder serve`` processes on one PostgreSQL and one S3 (moto) serve the same files:
a bounded mixed load ends with no error and nothing lost, and link state is shared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from tests.contract.sql_backends import SqlBackend, provision
from tests.e2e.serve_load import run_load
from tests.e2e.serve_process import LINK_KEY, ServeProcess, serve_env
from tests.s3server import DUMMY_ENV

pytestmark = [pytest.mark.postgres, pytest.mark.s3]


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[SqlBackend]:
    with provision("postgresql", tmp_path) as backend:
        yield backend


@pytest.fixture
def servers(
    tmp_path: Path, postgres: SqlBackend, s3_bucket: str, s3_endpoint: str
) -> Iterator[list[ServeProcess]]:
    env = serve_env(
        database_url=postgres.url.render_as_string(hide_password=False),
        blob_url=f"s3://{s3_bucket}/serve",
        s3_endpoint_url=s3_endpoint,
        link_keys=LINK_KEY,
    )
    env.update(DUMMY_ENV)
    started: list[ServeProcess] = []
    try:
        for n in range(2):
            started.append(ServeProcess(tmp_path / f"home-{n}", env, "--no-mcp"))
        yield started
    finally:
        for process in started:
            process.stop()


def test_two_processes_serve_a_mixed_load_with_no_error_and_nothing_lost(
    servers: list[ServeProcess],
) -> None:
    report = anyio.run(
        lambda: run_load([s.url for s in servers], clients=16, requests=240, workflows=4)
    )
    assert report.errors == []
    assert report.lost == []
    counts = {kind: len(v) for kind, v in report.latencies.items()}
    assert counts.keys() >= {"upload", "download", "resolve", "link_mint", "link_redeem"}
    assert report.requests >= 240
    assert len(report.uploads) == counts["upload"]


def test_a_one_time_link_and_a_revocation_hold_across_processes(
    servers: list[ServeProcess],
) -> None:
    first, second = (s.url for s in servers)
    with httpx.Client(timeout=60, trust_env=False) as http:
        workflow = http.post(f"{first}/v1/workflows").json()["id"]
        # Larger than the inline limit (64 KiB): the blob is in S3, so a link redirects there.
        shared = b"shared\n" * 10_000
        file_id = http.post(
            f"{first}/v1/workflows/{workflow}/files?name=a.txt", content=shared
        ).json()["fileId"]
        once = http.post(f"{first}/v1/files/{file_id}/links", json={"expiresIn": 60, "once": True})
        token = once.json()["url"].rpartition("/v1/links/")[2]
        answers = [http.get(f"{url}/v1/links/{token}") for url in (second, first, second)]
        assert [a.status_code for a in answers] == [307, 410, 410]  # S3: a presigned GET
        assert http.get(answers[0].headers["location"]).content == shared
        assert answers[1].json()["error"]["code"] == "used"
        plain = http.post(f"{second}/v1/files/{file_id}/links", json={"expiresIn": 60}).json()
        token = plain["url"].rpartition("/v1/links/")[2]
        assert http.get(f"{first}/v1/links/{token}").status_code == 307
        http.post(f"{first}/v1/links/revoke", json={"url": plain["url"]}).raise_for_status()
        refused = http.get(f"{second}/v1/links/{token}")
        assert (refused.status_code, refused.json()["error"]["code"]) == (410, "revoked")
        # A small file lives in the metadata database (inline tier): its link streams it.
        small_id = http.post(
            f"{first}/v1/workflows/{workflow}/files?name=b.txt", content=b"small"
        ).json()["fileId"]
        small = http.post(f"{first}/v1/files/{small_id}/links", json={"expiresIn": 60}).json()
        streamed = http.get(f"{second}/v1/links/{small['url'].rpartition('/v1/links/')[2]}")
        assert (streamed.status_code, streamed.content) == (200, b"small")
