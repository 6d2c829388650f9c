"""The link token's codec shortcuts give what the plain rules give (B4, ADR 0128)."""

from __future__ import annotations

import base64
import hmac
import re

from hypothesis import given
from hypothesis import strategies as st

from docbinder.domain.links import LinkKeys, _unb64


def _plain_unb64(text: str) -> bytes | None:
    """RFC 4648 §5 base64url without padding, as the rule reads: the alphabet, then decode."""
    if not text or not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return None


def _ours(text: str) -> bytes | None:
    try:
        return _unb64(text)
    except ValueError:
        return None


_URLSAFE = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", max_size=60
)


@given(st.binary(max_size=300))
def test_every_encoded_value_decodes_to_itself(data: bytes) -> None:
    text = base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
    if text:
        assert _unb64(text) == data


@given(_URLSAFE | st.text(max_size=40) | st.from_regex(r"[A-Za-z0-9_+/=\s-]{0,30}", fullmatch=True))
def test_any_text_is_decoded_or_refused_as_the_plain_rule_does(text: str) -> None:
    assert _ours(text) == _plain_unb64(text)


def test_the_characters_of_standard_base64_and_padding_are_refused() -> None:
    for text in ("ab+c", "ab/c", "abc=", "ab c", "abé", "a"):
        assert _ours(text) is None, text


@given(st.binary(min_size=32, max_size=64), st.text(alphabet="abcXYZ09-_.", max_size=400))
def test_the_keyed_mac_is_the_one_shot_hmac(secret: bytes, payload: str) -> None:
    keys = LinkKeys({"k1": secret}, "k1")
    expected = hmac.digest(secret, payload.encode("ascii"), "sha256")
    assert keys.mac("k1", payload) == expected
    assert keys.mac("k1", payload) == expected  # the keyed state is not used up
