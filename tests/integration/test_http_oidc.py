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


def test_an_issuer_without_keys_is_a_configuration_error(tmp_path: Path) -> None:
    settings = Settings.load({"home": str(tmp_path), "oidc_issuer": ISSUER}, environ={})
    with pytest.raises(ConfigurationError, match="oidc_jwks"):
        OidcIdentity(settings)
    with pytest.raises(ConfigurationError, match="never none"):
        Settings.load({"home": str(tmp_path), "oidc_algorithms": "RS256,none"}, environ={})
