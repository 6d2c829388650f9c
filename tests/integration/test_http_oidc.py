"""OIDC sign-in of ``docbinder serve``: JWTs checked with PyJWT against a JWKS file, claims
mapped to user, mandate, feature instance and roles by the ``oidc_*`` settings."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError
from docbinder.domain.model import Principal
from docbinder.integrations.http import OidcIdentity
from tests.integration.http_live import live_app, memory_binder

ISSUER = "https://id.example.test/realms/acme"


@pytest.fixture
def signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def settings(tmp_path: Path, signing_key: rsa.RSAPrivateKey) -> Settings:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing_key.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(
        json.dumps({"keys": [{**public, "kid": "key-1", "use": "sig", "alg": "RS256"}]})
    )
    return Settings.load(
        {
            "home": str(tmp_path),
            "oidc_issuer": ISSUER,
            "oidc_audience": "docbinder",
            "oidc_jwks": str(jwks),
            "oidc_mandate_claim": "tenant",
            "oidc_feature_instance_claim": "app",
            "oidc_roles_claim": "groups",
        },
        environ={},
    )


def token(key: Any, **claims: Any) -> str:
    now = int(time.time())
    body = {
        "iss": ISSUER,
        "aud": "docbinder",
        "sub": "alice",
        "tenant": "acme",
        "groups": ["member"],
        "iat": now,
        "exp": now + 300,
        **claims,
    }
    return jwt.encode(
        {k: v for k, v in body.items() if v is not None}, key, "RS256", headers={"kid": "key-1"}
    )


def test_claims_become_the_principal_and_bad_tokens_are_refused(
    settings: Settings, signing_key: rsa.RSAPrivateKey
) -> None:
    identity = OidcIdentity(settings)
    binder = memory_binder()
    with live_app(binder, identity) as live:
        good = token(signing_key, app="support", groups="member reviewer")
        created = live.client.post("/v1/workflows", headers={"Authorization": f"Bearer {good}"})
        assert created.status_code == 201
        workflow = binder.list_workflows(Principal("alice", "acme", "support"))
        assert [w.id for w in workflow] == [created.json()["id"]]
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = int(time.time())
        refused = {
            "expired": token(signing_key, exp=now - 3600, iat=now - 7200),
            "other issuer": token(signing_key, iss="https://evil.example.test"),
            "other audience": token(signing_key, aud="someone-else"),
            "no mandate": token(signing_key, tenant=None),
            "other key": token(other),
            "unsigned": jwt.encode(
                {
                    "iss": ISSUER,
                    "sub": "alice",
                    "tenant": "acme",
                    "exp": now + 60,
                    "aud": "docbinder",
                },
                None,
                "none",
            ),
            "hs256 with the public key": jwt.api_jws.PyJWS().encode(
                json.dumps(
                    {
                        "iss": ISSUER,
                        "aud": "docbinder",
                        "sub": "alice",
                        "tenant": "acme",
                        "exp": now + 60,
                    }
                ).encode(),
                b"not-the-key-at-all-not-the-key-at-all",
                algorithm="HS256",
            ),
            "garbage": "a.b.c",
        }
        for why, bad in refused.items():
            response = live.client.post("/v1/workflows", headers={"Authorization": f"Bearer {bad}"})
            assert response.status_code == 401, why
        # Without the roles claim a token signs in with no roles, so it may not write.
        no_roles = token(signing_key, groups=None)
        denied = live.client.post("/v1/workflows", headers={"Authorization": f"Bearer {no_roles}"})
        assert denied.status_code == 403, denied.text


def test_an_issuer_without_keys_is_a_configuration_error(tmp_path: Path) -> None:
    settings = Settings.load({"home": str(tmp_path), "oidc_issuer": ISSUER}, environ={})
    with pytest.raises(ConfigurationError, match="oidc_jwks"):
        OidcIdentity(settings)
    with pytest.raises(ConfigurationError, match="never none"):
        Settings.load({"home": str(tmp_path), "oidc_algorithms": "RS256,none"}, environ={})


def test_keys_are_fetched_from_a_jwks_url(
    settings: Settings, signing_key: rsa.RSAPrivateKey, tmp_path: Path
) -> None:
    import http.server
    import threading

    body = Path(settings.oidc_jwks or "").read_bytes()
    fetched: list[str] = []

    class Keys(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    issuer = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    thread = threading.Thread(target=issuer.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{issuer.server_address[1]}/certs"
        identity = OidcIdentity(settings.with_overrides({"oidc_jwks": url}))
        with live_app(memory_binder(), identity) as live:
            good = token(signing_key)
            for _ in range(3):
                created = live.client.post(
                    "/v1/workflows", headers={"Authorization": f"Bearer {good}"}
                )
                assert created.status_code == 201
            other = token(rsa.generate_private_key(public_exponent=65537, key_size=2048))
            refused = live.client.post(
                "/v1/workflows", headers={"Authorization": f"Bearer {other}"}
            )
            assert refused.status_code == 401
        assert fetched and set(fetched) == {"/certs"}
        assert len(fetched) <= 2  # cached between requests
    finally:
        issuer.shutdown()


def _bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


def _link_for(live: Any, jwt_text: str) -> tuple[str, str]:
    """Upload a file as the token's principal and mint a link to it: ``(file id, url)``."""
    workflow = live.client.post("/v1/workflows", headers=_bearer(jwt_text)).json()["id"]
    stored = live.client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": "report.txt"},
        content=b"the quarterly report",
        headers=_bearer(jwt_text),
    ).json()
    minted = live.client.post(
        f"/v1/files/{stored['fileId']}/links", json={"expiresIn": "10m"}, headers=_bearer(jwt_text)
    )
    assert minted.status_code == 201, minted.text
    return stored["fileId"], minted.json()["url"]


def _redeem(live: Any, url: str) -> Any:
    return live.client.get(url.replace(url.split("/v1/")[0], live.url))


def test_a_link_stops_when_its_oidc_signer_signs_in_with_other_roles(
    settings: Settings, signing_key: rsa.RSAPrivateKey
) -> None:
    binder = memory_binder()
    with live_app(binder, OidcIdentity(settings), public_url="http://127.0.0.1") as live:
        member = token(signing_key, groups=["member"])
        file_id, url = _link_for(live, member)
        assert _redeem(live, url).content == b"the quarterly report"

        # The issuer now gives alice other roles; her next request carries them.
        changed = token(signing_key, groups=["guest"], iat=int(time.time()) + 1)
        assert live.client.get("/v1/health", headers=_bearer(changed)).status_code == 200
        live.client.get(f"/v1/files/{file_id}", headers=_bearer(changed))
        refused = _redeem(live, url)
        assert (refused.status_code, refused.json()["error"]["code"]) == (
            403,
            "signer_cannot_read",
        )
        # Her roles come back: a link minted under them works again, the old one too.
        again = token(signing_key, groups=["member"])
        live.client.get(f"/v1/files/{file_id}", headers=_bearer(again))
        assert _redeem(live, url).content == b"the quarterly report"


def test_a_link_stops_when_its_oidc_signer_holds_no_token_any_more(
    settings: Settings, signing_key: rsa.RSAPrivateKey
) -> None:
    binder = memory_binder()
    with live_app(binder, OidcIdentity(settings), public_url="http://127.0.0.1") as live:
        short = token(signing_key, exp=int(time.time()) + 2)
        _, url = _link_for(live, short)
        assert _redeem(live, url).status_code == 200
        # The issuer removed alice: she gets no new token, and the one she had runs out.
        time.sleep(max(0.0, int(time.time()) + 1 - time.time()) + 2)
        refused = _redeem(live, url)
        assert (refused.status_code, refused.json()["error"]["code"]) == (
            403,
            "signer_cannot_read",
        )


def test_the_signer_grace_lets_a_link_outlive_the_signers_token(
    settings: Settings, signing_key: rsa.RSAPrivateKey
) -> None:
    graced = settings.with_overrides({"oidc_signer_grace": "3600"})
    binder = memory_binder()
    with live_app(binder, OidcIdentity(graced), public_url="http://127.0.0.1") as live:
        short = token(signing_key, exp=int(time.time()) + 1)
        _, url = _link_for(live, short)
        time.sleep(2.5)
        assert _redeem(live, url).content == b"the quarterly report"


def test_a_link_of_a_signer_this_service_never_saw_sign_in_is_refused(
    settings: Settings, signing_key: rsa.RSAPrivateKey
) -> None:
    """A link minted elsewhere (the CLI's fixed identity) names a signer with no sign-in here."""
    binder = memory_binder()
    alice = Principal("alice", "acme", roles=("member",))
    run = binder.start_run(alice)
    stored = run.produce_file("r.txt", b"report")
    link = run.link_for(stored.item.id, expires_in=600, base_url="http://127.0.0.1")
    with live_app(binder, OidcIdentity(settings)) as live:
        refused = _redeem(live, link.url)
        assert refused.json()["error"]["code"] == "signer_cannot_read"


def test_mcp_is_mounted_with_oidc_and_signs_in_with_the_same_jwts(
    settings: Settings, signing_key: rsa.RSAPrivateKey
) -> None:
    """The official MCP client sends a bearer JWT to ``/mcp`` of ``docbinder serve``."""
    import anyio
    import httpx

    from docbinder.integrations.http import OidcTokens, build_app
    from docbinder.integrations.httpguard import HttpLimits
    from docbinder.integrations.mcp import DocbinderMcpServer
    from tests.integration.http_live import Live
    from tests.integration.mcp_http import ACCEPT, INITIALIZE, free_port, mcp_client

    binder = memory_binder()
    identity = OidcIdentity(settings)
    port = free_port()
    limits = HttpLimits(sessions_per_principal=2)
    fixed = Principal("nobody", "nowhere", roles=("member",))  # never a request's principal
    mcp_app = DocbinderMcpServer(binder, fixed).http_app(
        host="127.0.0.1", port=port, tokens=OidcTokens(identity), limits=limits
    )
    app = build_app(binder, identity, host="127.0.0.1", port=port, limits=limits, mcp_app=mcp_app)
    live = Live(app, "127.0.0.1", port, limits)
    url = f"{live.url}/mcp"
    try:
        alice = token(signing_key, app="support")
        bob = token(signing_key, sub="bob", tenant="globex")

        async def work(jwt_text: str, name: str, mode: str) -> tuple[str, str]:
            async with mcp_client(url, jwt_text, mode=mode) as client:
                written = await client.call_tool("write_file", {"name": name, "content": "x"})
                listed = await client.call_tool("list_files", {})
                return written.content[0].text, listed.content[0].text

        written, listed = anyio.run(work, alice, "alice.txt", "legacy")
        assert "documentList ref: docItem:" in written and "alice.txt" in listed
        written, listed = anyio.run(work, bob, "bob.txt", "legacy")
        assert "bob.txt" in listed and "alice.txt" not in listed
        assert len(binder.list_workflows(Principal("alice", "acme", "support"))) == 1
        assert len(binder.list_workflows(Principal("bob", "globex"))) == 1
        assert binder.list_workflows(fixed) == []

        with httpx.Client(trust_env=False, timeout=10) as raw:
            now = int(time.time())
            for why, bad in {
                "no token": None,
                "expired": token(signing_key, exp=now - 3600, iat=now - 7200),
                "other key": token(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
                "other audience": token(signing_key, aud="someone-else"),
            }.items():
                headers = {**ACCEPT, **({"Authorization": f"Bearer {bad}"} if bad else {})}
                refused = raw.post(url, json=INITIALIZE, headers=headers)
                assert refused.status_code == 401, why
            # each principal has its own session limit, as with a token file
            opened = [
                raw.post(
                    url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {alice}"}
                ).status_code
                for _ in range(3)
            ]
            assert opened[:2] == [200, 200] and opened[2] == 503
            other = raw.post(
                url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {bob}"}
            )
            assert other.status_code == 200
    finally:
        live.stop()
