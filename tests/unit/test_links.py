"""Signed links in the domain (HMAC with key ids, expiry, lifetimes) and in the library
(``run.link_for``, the ``download:`` line, the keys file)."""

from __future__ import annotations

import base64
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from docbinder.config import Settings
from docbinder.container import load_link_keys
from docbinder.domain.errors import ConfigurationError, FileItemNotFound, InvalidInput
from docbinder.domain.links import (
    LinkClaims,
    LinkKeys,
    LinkRefusal,
    LinkRefused,
    parse_duration,
    sign_link,
    verify_link,
)
from docbinder.domain.model import Principal
from tests.integration.http_live import ALICE, MALLORY, fixed_keys, memory_binder

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SECRET = base64.b64encode(b"s" * 32).decode()


def claims(**changes: object) -> LinkClaims:
    values: dict[str, object] = {
        "link_id": "l-1",
        "key_id": "k1",
        "mandate_id": "acme",
        "feature_instance_id": None,
        "file_id": "f-1",
        "sha256": "a" * 64,
        "signer": Principal("alice", "acme", roles=("member",)),
        "audience": None,
        "expires_at": NOW + timedelta(minutes=10),
        "once": False,
    }
    values.update(changes)
    return LinkClaims(**values)  # type: ignore[arg-type]


def test_a_signed_link_verifies_to_the_same_claims_until_it_expires() -> None:
    keys = fixed_keys("k1")
    token = sign_link(claims(once=True, audience="bot"), keys)
    assert verify_link(token, keys, now=NOW) == claims(once=True, audience="bot")
    with pytest.raises(LinkRefused) as expired:
        verify_link(token, keys, now=NOW + timedelta(minutes=10))
    assert expired.value.reason is LinkRefusal.EXPIRED
    assert expired.value.claims == claims(once=True, audience="bot")


def test_a_key_it_was_not_signed_with_does_not_verify_it() -> None:
    token = sign_link(claims(), fixed_keys("k1"))
    other = LinkKeys.parse("k1:" + SECRET)  # the same key id, another secret
    with pytest.raises(LinkRefused) as refused:
        verify_link(token, other, now=NOW)
    assert refused.value.reason is LinkRefusal.TAMPERED
    with pytest.raises(LinkRefused) as unknown:
        verify_link(token, fixed_keys("k2"), now=NOW)
    assert unknown.value.reason is LinkRefusal.UNKNOWN_KEY
    assert verify_link(token, fixed_keys("k2", "k1"), now=NOW).key_id == "k1"  # rotation


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t + "A",
        lambda t: t.replace(".", ".."),
        lambda t: "x" * 5000,
        lambda t: "",
        lambda t: t.split(".")[0],
        lambda t: "e30." + t.split(".")[1],  # {} signed with nothing
    ],
)
def test_a_mangled_token_is_tampered(mangle: object) -> None:
    token = sign_link(claims(), fixed_keys("k1"))
    with pytest.raises(LinkRefused) as refused:
        verify_link(mangle(token), fixed_keys("k1"), now=NOW)  # type: ignore[operator]
    assert refused.value.reason is LinkRefusal.TAMPERED


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(90, 90), ("90", 90), ("90s", 90), ("10m", 600), ("2h", 7200), ("1d", 86400), (" 5 m ", 300)],
)
def test_lifetimes(value: object, seconds: int) -> None:
    assert parse_duration(value) == timedelta(seconds=seconds)


@pytest.mark.parametrize("value", [0, -1, "0s", "8d", "10 minutes", "1.5h", None, True, [], "m"])
def test_bad_lifetimes(value: object) -> None:
    with pytest.raises(InvalidInput, match="a link's lifetime must be"):  # no HTTP field name
        parse_duration(value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "no key"),
        ("k1", "KEY_ID:BASE64_SECRET"),
        ("k1:c2hvcnQ=", "at least 32"),
        ("k 1:" + SECRET, "key id"),
        ("k1:" + SECRET + ",k1:" + SECRET, "twice"),
        ("k1:***", "not base64"),
    ],
)
def test_bad_keys_name_the_setting(text: str, needle: str) -> None:
    with pytest.raises(ConfigurationError, match="link_keys") as error:
        LinkKeys.parse(text)
    assert needle in str(error.value)


def test_a_keys_file_is_read_only_when_only_its_owner_may_write_it(tmp_path: Path) -> None:
    path = tmp_path / "link-keys"
    path.write_text(f"# rotated monthly\nk2:{SECRET}\nk1:{SECRET}\n")
    path.chmod(0o600)
    settings = Settings.load({"home": str(tmp_path), "link_keys_file": str(path)}, environ={})
    keys = load_link_keys(settings)
    assert keys is not None and keys.current == "k2" and set(keys.keys) == {"k1", "k2"}
    path.chmod(0o620)
    with pytest.raises(ConfigurationError, match="chmod 600"):
        load_link_keys(settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o620
    both = Settings.load(
        {"home": str(tmp_path), "link_keys_file": str(path), "link_keys": f"k:{SECRET}"},
        environ={},
    )
    with pytest.raises(ConfigurationError, match="not both"):
        load_link_keys(both)
    assert load_link_keys(Settings.load({"home": str(tmp_path)}, environ={})) is None


def test_run_link_for_takes_a_docitem_reference_and_checks_read_access() -> None:
    binder = memory_binder(public_url="https://files.example.test/")
    run = binder.start_new_run(ALICE)
    produced = run.produce_file("notes.txt", b"notes")
    assert produced.reference is not None
    link = run.link_for(produced.reference, expires_in="10m", once=True)
    assert link.url.startswith("https://files.example.test/v1/links/")
    assert link.file.id == produced.item.id and link.once is True
    same = run.link_for(produced.item.id, expires_in=60)
    assert same.file.id == produced.item.id and same.link_id != link.link_id
    redeemed = binder.redeem_link(link.token)
    assert redeemed.file.id == produced.item.id
    with pytest.raises(FileItemNotFound):
        binder.start_new_run(MALLORY).link_for(produced.item.id, expires_in=60)
    with pytest.raises(FileItemNotFound):
        binder.start_new_run(MALLORY).link_for(produced.reference, expires_in=60)


def test_the_tool_result_has_a_download_line_only_with_a_public_url() -> None:
    plain = memory_binder().start_new_run(ALICE).produce_file("a.txt", b"a").text
    assert "download:" not in plain
    binder = memory_binder(public_url="http://127.0.0.1:8080")
    result = binder.start_new_run(ALICE).produce_file("a.txt", b"a")
    lines = result.text.splitlines()
    assert lines[1].startswith("  documentList ref: docItem:")
    assert lines[-1].startswith("  download: http://127.0.0.1:8080/v1/links/")
    token = lines[-1].split("/v1/links/")[1].split(" ")[0]
    assert binder.redeem_link(token).file.id == result.item.id
    no_keys = memory_binder(public_url="http://127.0.0.1:8080", link_keys=None)
    assert "download:" not in no_keys.start_new_run(ALICE).produce_file("a.txt", b"a").text


def test_with_the_audit_log_on_every_mint_and_redemption_is_an_audit_event() -> None:
    binder = memory_binder(audit=True, public_url="http://127.0.0.1:8080")
    run = binder.start_new_run(ALICE)
    produced = run.produce_file("notes.txt", b"notes")
    link = run.link_for(produced.item.id, expires_in="10m")
    assert binder.redeem_link(link.token).file.id == produced.item.id
    with pytest.raises(LinkRefused):
        binder.redeem_link(link.token[:-2] + ("A" if link.token[-2] != "A" else "B") + "x")
    events = [
        (e.action.value, e.outcome, e.file_id, e.principal)
        for e in binder.audit_log.list()
        if e.action.value.startswith("link_")
    ]
    # the tool result's download line minted one link, link_for the second
    assert events[:3] == [
        ("link_mint", "ok", produced.item.id, ALICE.user_id),
        ("link_mint", "ok", produced.item.id, ALICE.user_id),
        ("link_redeem", "ok", produced.item.id, ALICE.user_id),
    ]
    [(action, outcome, _file, _who)] = events[3:]
    assert (action, outcome) == ("link_redeem", "tampered")
    assert binder.audit_log.verify().ok
    assert link.token not in repr(binder.audit_log.list())  # a credential never stored
