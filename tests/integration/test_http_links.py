"""Signed, expiring links over a live ``docbinder serve``: redeemed without credentials, and
refused with the reason when tampered, expired, revoked, used, deleted, changed, no longer
readable by the signer, or for another audience; S3 blobs redirect to a presigned GET."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.domain.access import Action
from tests.integration.http_live import ALICE, auth, fixed_keys, live_app, memory_binder


class MovableClock:
    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def now(self) -> datetime:
        return self.at


class RevocableAuthorizer(RoleTableAuthorizer):
    """The role table, except for users whose rights were taken away since."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked: set[str] = set()

    def is_allowed(self, principal: Any, action: Action, resource: Any) -> bool:
        if principal.user_id in self.blocked:
            return False
        return super().is_allowed(principal, action, resource)


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
def authorizer() -> RevocableAuthorizer:
    return RevocableAuthorizer()


@pytest.fixture
def served(clock: MovableClock, authorizer: RevocableAuthorizer) -> Iterator[tuple[Any, Any]]:
    binder = memory_binder(clock=clock, authorizer=authorizer)
    with live_app(binder) as live:
        yield live, binder


def _file(live: Any, data: bytes = b"the report", name: str = "report.txt") -> dict[str, Any]:
    client = live.client
    workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
    stored = client.post(
        f"/v1/workflows/{workflow}/files",
        params={"name": name},
        content=data,
        headers=auth("alice"),
    ).json()
    stored["workflow"] = workflow
    return stored


def _mint(live: Any, file_id: str, **body: Any) -> dict[str, Any]:
    response = live.client.post(
        f"/v1/files/{file_id}/links", json={"expiresIn": "10m", **body}, headers=auth("alice")
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def _redeem(live: Any, url: str, **params: Any) -> httpx.Response:
    # A fresh client: no credentials, no cookies, as a browser that only has the URL.
    with httpx.Client(timeout=30, trust_env=False) as anonymous:
        return anonymous.get(url, params=params)


def test_a_link_downloads_without_credentials_until_it_expires(
    served: tuple[Any, Any], clock: MovableClock, caplog: pytest.LogCaptureFixture
) -> None:
    live, _ = served
    stored = _file(live)
    caplog.set_level(logging.INFO, logger="docbinder.links")
    link = _mint(live, stored["fileId"], expiresIn=600)
    assert link["url"].startswith(f"{live.url}/v1/links/")
    expires = datetime.fromisoformat(link["expiresAt"])
    assert timedelta(seconds=599) <= expires - clock.at <= timedelta(seconds=600)
    first = _redeem(live, link["url"])
    assert (first.status_code, first.content) == (200, b"the report")
    assert first.headers["etag"] == f'"{stored["sha256"]}"'
    assert _redeem(live, link["url"]).status_code == 200  # not a one-time link
    ranged = httpx.get(link["url"], headers={"range": "bytes=4-9"}, trust_env=False)
    assert (ranged.status_code, ranged.content) == (206, b"report")
    clock.at = expires + timedelta(seconds=1)
    late = _redeem(live, link["url"])
    assert late.status_code == 410
    assert late.json()["error"]["code"] == "expired"
    assert "expired" in late.json()["error"]["message"]
    lines = [r.getMessage() for r in caplog.records if r.name == "docbinder.links"]
    assert [line.split(":")[0] for line in lines] == [
        "link mint ok",
        "link redeem ok",
        "link redeem ok",
        "link redeem ok",
        "link redeem expired",
    ]
    assert all(link["url"].rpartition("/")[2] not in line for line in lines)  # never the token
    assert all(link["linkId"] in line for line in lines)


def _tamper(url: str) -> list[str]:
    base, _, token = url.rpartition("/")
    payload, signature = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["f"] = "00000000-0000-0000-0000-000000000000"
    forged = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    return [
        f"{base}/{forged}.{signature}",
        f"{base}/{payload}.{flipped}",
        f"{base}/{payload}",
        f"{base}/not-a-link",
        f"{base}/{payload}.{signature}.{signature}",
    ]


def test_tampered_links_are_refused_as_tampered(served: tuple[Any, Any]) -> None:
    live, _ = served
    link = _mint(live, _file(live)["fileId"])
    for url in _tamper(link["url"]):
        response = _redeem(live, url)
        assert response.status_code == 403, url
        assert response.json()["error"]["code"] == "tampered"
    assert _redeem(live, link["url"]).status_code == 200


def test_revoked_used_deleted_changed_and_unreadable_links_say_why(
    served: tuple[Any, Any], authorizer: RevocableAuthorizer
) -> None:
    live, binder = served
    client = live.client
    stored = _file(live)
    revoked = _mint(live, stored["fileId"])
    bob_revokes = client.post("/v1/links/revoke", json={"url": revoked["url"]}, headers=auth("bob"))
    assert bob_revokes.status_code == 403  # only the signer (or an admin of the mandate)
    assert _redeem(live, revoked["url"]).status_code == 200
    done = client.post("/v1/links/revoke", json={"url": revoked["url"]}, headers=auth("alice"))
    assert done.json() == {"linkId": revoked["linkId"], "revoked": True}
    assert _redeem(live, revoked["url"]).json()["error"]["code"] == "revoked"

    once = _mint(live, stored["fileId"], once=True)
    with httpx.Client(timeout=30, trust_env=False) as previewer:  # a mail scanner's HEAD
        assert previewer.head(once["url"]).status_code == 200
        # answers that send no bytes leave the link unused too: 304 and 416
        etag = f'"{stored["sha256"]}"'
        assert previewer.get(once["url"], headers={"if-none-match": etag}).status_code == 304
        beyond = previewer.get(once["url"], headers={"range": "bytes=999999-"})
        assert beyond.status_code == 416
    assert _redeem(live, once["url"]).status_code == 200
    used = _redeem(live, once["url"])
    assert (used.status_code, used.json()["error"]["code"]) == (410, "used")

    audience = _mint(live, stored["fileId"], audience="ci-bot")
    assert _redeem(live, audience["url"]).json()["error"]["code"] == "wrong_audience"
    assert _redeem(live, audience["url"], audience="other").status_code == 403
    assert _redeem(live, audience["url"], audience="ci-bot").status_code == 200

    changed = _mint(live, stored["fileId"])
    binder.update_file.replace(ALICE, stored["fileId"], b"the report, revised")
    assert _redeem(live, changed["url"]).json()["error"]["code"] == "changed"
    fresh = _mint(live, stored["fileId"])  # the docItem reference is the permanent handle
    assert _redeem(live, fresh["url"]).content == b"the report, revised"

    authorizer.blocked.add("alice")
    assert _redeem(live, fresh["url"]).json()["error"]["code"] == "signer_cannot_read"
    authorizer.blocked.clear()

    binder.delete_file(ALICE, stored["fileId"], force=True)
    gone = _redeem(live, fresh["url"])
    assert (gone.status_code, gone.json()["error"]["code"]) == (410, "deleted")


def test_keys_rotate_and_a_removed_key_is_named(clock: MovableClock) -> None:
    store_keys = {}
    from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
    from docbinder.adapters.memory.links import MemoryLinkLedger

    store, blobs, ledger = MemoryMetadataStore(), MemoryBlobStore(), MemoryLinkLedger()
    for name, keys in (
        ("old", fixed_keys("k1")),
        ("both", fixed_keys("k2", "k1")),
        ("new", fixed_keys("k2")),
    ):
        store_keys[name] = memory_binder(
            store=store, blobs=blobs, link_ledger=ledger, link_keys=keys, clock=clock
        )
    old = store_keys["old"]
    item = old.start_new_run(ALICE).produce_file("a.txt", b"a").item
    with live_app(store_keys["both"]) as live:
        minted = old.start_run(ALICE).link_for(item.id, expires_in="5m", base_url=live.url)
        assert _redeem(live, minted.url).content == b"a"  # k1 still verifies
        rotated = (
            store_keys["both"]
            .start_run(ALICE)
            .link_for(item.id, expires_in=60, base_url="http://x")
        )
        assert '"kid":"k2"' in base64.urlsafe_b64decode(rotated.token.split(".")[0] + "==").decode()
    with live_app(store_keys["new"]) as live:
        response = _redeem(live, minted.url.replace(minted.url.split("/v1/")[0], live.url))
        assert (response.status_code, response.json()["error"]["code"]) == (403, "unknown_key")


def test_without_a_key_minting_is_refused_naming_the_setting() -> None:
    binder = memory_binder(link_keys=None)
    with live_app(binder) as live:
        stored = _file(live)
        response = live.client.post(
            f"/v1/files/{stored['fileId']}/links", json={"expiresIn": 60}, headers=auth("alice")
        )
        assert response.status_code == 503
        assert "link_keys" in response.json()["error"]["message"]


def test_bad_lifetimes_are_refused(served: tuple[Any, Any]) -> None:
    live, _ = served
    file_id = _file(live)["fileId"]
    for bad in (0, -5, "soon", "9999d", True, None):
        response = live.client.post(
            f"/v1/files/{file_id}/links", json={"expiresIn": bad}, headers=auth("alice")
        )
        assert response.status_code == 400, bad


@pytest.mark.s3
def test_with_s3_blobs_a_link_redirects_to_a_presigned_get(
    s3_bucket: str, s3_endpoint: str
) -> None:
    from docbinder.adapters.s3 import S3BlobStore

    blobs = S3BlobStore(s3_bucket, "links", endpoint_url=s3_endpoint)
    binder = memory_binder(blobs=blobs)
    data = b"%PDF-1.4 not really a pdf, but bytes in S3"
    with live_app(binder) as live:
        stored = _file(live, data, name="Q3 «report».pdf")
        link = _mint(live, stored["fileId"])
        with httpx.Client(timeout=30, trust_env=False) as anonymous:
            redirect = anonymous.get(link["url"])
            assert redirect.status_code == 307
            target = redirect.headers["location"]
            assert target.startswith(s3_endpoint)
            fetched = anonymous.get(target)
        assert fetched.status_code == 200
        assert fetched.content == data
        assert fetched.headers["content-type"] == "application/pdf"  # no charset: not text
        disposition = fetched.headers["content-disposition"]
        assert disposition.startswith("attachment")  # a PDF is active content
        assert "filename*=UTF-8''Q3%20%C2%ABreport%C2%BB.pdf" in disposition
        binder.delete_file(ALICE, stored["fileId"], force=True)
        assert _redeem(live, link["url"]).json()["error"]["code"] == "deleted"


@pytest.mark.s3
def test_with_the_inline_tier_over_s3_a_small_file_streams_and_a_large_one_redirects(
    s3_bucket: str, s3_endpoint: str
) -> None:
    """A small file's bytes are in the metadata database (ADR 0110): no presigned URL reads
    them, so the signed link streams them; a file over the limit still redirects to S3."""
    from docbinder.adapters.inline import InlineTierBlobStore
    from docbinder.adapters.memory import MemoryMetadataStore
    from docbinder.adapters.s3 import S3BlobStore

    store = MemoryMetadataStore()
    bulk = S3BlobStore(s3_bucket, "inline-links", endpoint_url=s3_endpoint)
    tier = InlineTierBlobStore(bulk, store.unit_of_work, limit=1024)
    binder = memory_binder(store=store, blobs=tier)
    small, large = b"a,b\n1,2\n", "stadt,zahl\nZürich,1\n".encode() * 300
    with live_app(binder) as live:
        small_id = _file(live, small, name="small.csv")["fileId"]
        large_id = _file(live, large, name="large.csv")["fileId"]
        with httpx.Client(timeout=30, trust_env=False) as anonymous:
            streamed = anonymous.get(_mint(live, small_id)["url"])
            assert streamed.status_code == 200 and streamed.content == small
            redirect = anonymous.get(_mint(live, large_id)["url"])
            assert redirect.status_code == 307
            assert redirect.headers["location"].startswith(s3_endpoint)
            fetched = anonymous.get(redirect.headers["location"])
            assert fetched.content == large
            # S3 answers with the type the presigned GET asked for: text with its charset
            assert fetched.headers["content-type"] == "text/csv; charset=utf-8"
            assert streamed.headers["content-type"] == "text/csv; charset=utf-8"
    assert list(bulk.keys()) == [binder.get_file(ALICE, large_id).blob_key]


def test_a_signer_the_token_file_no_longer_lists_cannot_be_redeemed_for() -> None:
    from docbinder.integrations.http import TokenIdentity
    from docbinder.integrations.mcp import BearerTokens, token_hash
    from tests.integration.http_live import PRINCIPALS, TOKENS

    binder = memory_binder()
    with live_app(binder) as live:
        link = _mint(live, _file(live)["fileId"])
        assert _redeem(live, link["url"]).status_code == 200
    without_alice = BearerTokens(
        {token_hash(TOKENS[n]): p for n, p in PRINCIPALS.items() if n != "alice"}
    )
    with live_app(binder, TokenIdentity(without_alice)) as live:
        url = f"{live.url}/v1/links/{link['url'].rpartition('/')[2]}"
        refused = _redeem(live, url)
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "signer_cannot_read")
