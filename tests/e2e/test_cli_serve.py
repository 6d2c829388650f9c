"""``docbinder serve`` and ``docbinder files link`` as a user runs them: real processes, real HTTP."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import anyio
import httpx
import pytest

from tests.e2e.serve_process import (
    LINK_KEY,
    ROOT,
    ServeProcess,
    docbinder,
    free_port,
    serve_env,
)


def test_upload_resolve_link_and_download_against_a_running_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()  # picked first: the public URL names it
    env = serve_env(link_keys=LINK_KEY, public_url=f"http://127.0.0.1:{port}")
    server = ServeProcess(home, env, port=port)
    try:
        assert "signed links on" in server.stderr_text()
        with httpx.Client(base_url=server.url, timeout=30, trust_env=False) as client:
            workflow = client.post("/v1/workflows").json()["id"]
            stored = client.post(
                f"/v1/workflows/{workflow}/files?name=sales.csv",
                content=b"region,total\nnorth,10\nsouth,12\n",
            ).json()
            resolved = client.post(
                f"/v1/workflows/{workflow}/resolve",
                json={"documentList": f"Please use `{stored['documentRef'].upper()}`."},
            ).json()
            assert [d["documentRef"] for d in resolved["documents"]] == [stored["documentRef"]]
            link = client.post(f"/v1/files/{stored['fileId']}/links", json={"expiresIn": "10m"})
            assert link.status_code == 201
            url = link.json()["url"]
        assert httpx.get(url, trust_env=False).content == b"region,total\nnorth,10\nsouth,12\n"

        cli = subprocess.run(
            docbinder(home, "files", "link", stored["fileId"], "--expires", "10m"),
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cli.returncode == 0, cli.stderr
        printed = cli.stdout.strip()
        assert re.fullmatch(
            rf"{re.escape(server.url)}/v1/links/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+", printed
        )
        assert httpx.get(printed, trust_env=False).content.startswith(b"region,total")
        by_ref = subprocess.run(
            docbinder(
                home, "files", "link", stored["documentRef"], "-w", workflow, "--once", "--json"
            ),
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert by_ref.returncode == 0, by_ref.stderr
        assert '"once": true' in by_ref.stdout

        async def tools() -> list[str]:
            from mcp import Client

            async with Client(f"{server.url}/mcp") as mcp_client:
                return [t.name for t in (await mcp_client.list_tools()).tools]

        assert "read_documents" in anyio.run(tools)
    finally:
        server.stop()


def test_files_link_without_a_key_names_the_setting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = serve_env(public_url="http://127.0.0.1:9")
    made = subprocess.run(
        docbinder(home, "workflow", "new", "--json"),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    result = subprocess.run(
        docbinder(home, "files", "link", "00000000-0000-4000-8000-000000000000"),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "link_keys" in result.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_serving_beyond_loopback_without_authentication_is_refused(
    tmp_path: Path, host: str
) -> None:
    result = subprocess.run(
        docbinder(tmp_path / "home", "serve", "--host", host, "--port", "8099"),
        env=serve_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "without authentication" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_error_line_before_anything_says_serving(
    tmp_path: Path, workers: str
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            docbinder(tmp_path / "home", "serve", "--port", str(port), "--workers", workers),
            env=serve_env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: "), result.stderr
    assert "--port" in result.stderr and "serving" not in result.stderr
    assert result.stderr.count("\n") == 1


def test_serve_prints_a_one_time_sign_in_link_that_sets_an_httponly_cookie(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = serve_env(link_keys=LINK_KEY)
    made = subprocess.run(
        docbinder(home, "workflow", "new", "--json"),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    workflow = re.search(r"[0-9a-f-]{36}", made.stdout)
    assert workflow is not None
    server = ServeProcess(home, env, "--signin", workflow.group(0))
    try:
        found = re.search(r"sign in \(once, within 5 minutes\): (\S+)", server.stderr_text())
        assert found is not None, server.stderr_text()
        with httpx.Client(timeout=30, trust_env=False) as browser:
            first = browser.get(found.group(1))
            assert first.status_code == 303
            assert first.headers["location"] == f"/ui/workflows/{workflow.group(0)}"
            cookie = first.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
            page = browser.get(f"{server.url}{first.headers['location']}")
            assert page.status_code == 200 and workflow.group(0) in page.text
            index = browser.get(f"{server.url}/ui/")
            assert index.status_code == 200 and f"/ui/workflows/{workflow.group(0)}" in index.text
            # "inspector /ui/" as the start line says; /ui itself leads there (MCP has "/")
            assert "inspector /ui/" in server.stderr_text()
            bare = browser.get(f"{server.url}/ui", follow_redirects=True)
            assert bare.status_code == 200 and bare.url.path == "/ui/"
        with httpx.Client(timeout=30, trust_env=False) as other:
            assert other.get(found.group(1)).status_code == 403  # used already
            signed_out = other.get(f"{server.url}/ui", follow_redirects=True)
            assert signed_out.status_code == 401 and "--signin WORKFLOW_ID" in signed_out.text
    finally:
        server.stop()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(t) for t in text]
    return found


def test_workers_are_processes_sharing_the_port_and_the_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = serve_env(link_keys=LINK_KEY)
    server = ServeProcess(home, env, "--workers", "2", "--no-mcp")
    try:
        assert "2 processes" in server.stderr_text()
        assert len(_children(server.process.pid)) == 2
        with httpx.Client(base_url=server.url, timeout=30, trust_env=False) as client:
            workflow = client.post("/v1/workflows").json()["id"]
            stored = [
                client.post(
                    f"/v1/workflows/{workflow}/files?name=f{n}.txt", content=f"n{n}".encode()
                ).json()
                for n in range(12)
            ]
        # Fresh connections land on either process; every one sees every file.
        for item in stored:
            with httpx.Client(base_url=server.url, timeout=30, trust_env=False) as fresh:
                assert fresh.get(f"/v1/files/{item['fileId']}/content").status_code == 200
        view = httpx.get(f"{server.url}/v1/workflows/{workflow}", trust_env=False).json()
        assert len(view["documents"]) == 12
    finally:
        server.stop()
    assert server.process.returncode == 0


def test_serve_with_oidc_mounts_mcp_behind_the_same_jwts(tmp_path: Path) -> None:
    """``docbinder serve`` with ``oidc_*`` settings: the API and ``/mcp`` take one JWT."""
    import json
    import time

    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k", "use": "sig", "alg": "RS256"}]}))
    issuer = "https://id.example.test/realms/acme"
    env = serve_env(oidc_issuer=issuer, oidc_jwks=str(jwks), oidc_audience="docbinder")
    now = int(time.time())
    token = jwt.encode(
        {
            "iss": issuer,
            "aud": "docbinder",
            "sub": "carol",
            "mandate": "acme",
            "roles": ["member"],
            "exp": now + 300,
        },
        key,
        "RS256",
        headers={"kid": "k"},
    )
    server = ServeProcess(tmp_path / "home", env)
    try:
        assert "MCP /mcp" in server.stderr_text()
        with httpx.Client(base_url=server.url, timeout=30, trust_env=False) as client:
            assert client.post("/v1/workflows").status_code == 401
            headers = {"Authorization": f"Bearer {token}"}
            assert client.post("/v1/workflows", headers=headers).status_code == 201

        async def tools() -> list[str]:
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            async with (
                create_mcp_http_client(headers=headers) as http,
                Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as mcp,
            ):
                return [t.name for t in (await mcp.list_tools()).tools]

        assert "read_documents" in anyio.run(tools)
        refused = httpx.post(
            f"{server.url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
            trust_env=False,
        )
        assert refused.status_code == 401
    finally:
        server.stop()


def test_a_storage_fault_is_in_the_serve_log_and_not_in_the_answer(tmp_path: Path) -> None:
    """The answer to a missing blob names no store location; the server's log has the cause
    at the default verbosity (the answer's sentence sends an operator there)."""
    home = tmp_path / "home"
    server = ServeProcess(home, serve_env(), "--no-mcp")
    try:
        with httpx.Client(base_url=server.url, timeout=30, trust_env=False) as client:
            workflow = client.post("/v1/workflows").json()["id"]
            large = b"".join(
                b"row %d of a report beyond the inline tier\n" % n for n in range(3000)
            )
            stored = client.post(f"/v1/workflows/{workflow}/files?name=big.txt", content=large)
            file_id = stored.json()["fileId"]
            [blob] = (home / "blobs").glob(f"*/{file_id}")
            blob.unlink()
            answer = client.get(f"/v1/files/{file_id}/content")
        log = server.stderr_text()
    finally:
        server.stop()
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "blob_missing"
    assert str(home) not in answer.text and "file://" not in answer.text
    assert any("HTTP request failed" in line and file_id in line for line in log.splitlines()), log
