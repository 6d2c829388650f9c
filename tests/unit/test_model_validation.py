"""Entity validators accept and refuse exactly what their full rules say, with the same messages.

Each validator has a fast path for the usual value; these tests compare it, on many
generated values, with the rule written out plainly (the reference functions below).
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from docbinder.adapters.sql import rows
from docbinder.adapters.system import UuidIdFactory, uuid4_text
from docbinder.application.steps.results import printable
from docbinder.domain import model
from docbinder.domain.counters import MAX_COUNTER, check_counter
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import (
    MAX_LABEL_LENGTH,
    Scope,
    check_text_field,
    duplicate_key,
    version_space_key,
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_BAD_ID_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# Default_Ignorable_Code_Point, Unicode 15.1 DerivedCoreProperties.txt, as listed there.
_DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]  # fmt: skip
# Format characters Unicode 15 added after this Python's character database.
_NEWER_FORMAT = range(0x13439, 0x13440)


def _invisible(char: str) -> bool:
    """A format character (Cf) or a default-ignorable one: it renders as nothing."""
    code = ord(char)
    return (
        unicodedata.category(char) == "Cf"
        or code in _NEWER_FORMAT
        or any(low <= code <= high for low, high in _DEFAULT_IGNORABLE)
    )


_NUL_OR_SURROGATE = re.compile(r"[\x00\ud800-\udfff]")


class Field:
    """Stands in for the ``attrs.Attribute`` a validator receives (only its name is read)."""

    name = "field"


class Text(str):
    """A str subclass: validators must treat it as the str it is."""


class Printable(str):
    """A str subclass that calls itself printable: the character rules must look for themselves."""

    def isprintable(self) -> bool:
        return True


class Count(int):
    """An int subclass."""


class Moment(datetime):
    """A datetime subclass whose offset is whatever ``utcoffset`` says."""

    def utcoffset(self) -> timedelta | None:
        return timedelta(hours=1)


# -- the rules written out plainly ------------------------------------------------------


def reference_id(value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > 128:
        raise InvalidInput("field must be a non-empty string of at most 128 characters")
    if _BAD_ID_CHAR.search(value) or any(_invisible(c) for c in value):
        raise InvalidInput(
            "field must not contain whitespace, control, invisible format characters "
            "or lone surrogates"
        )


def reference_non_negative(value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput("field must be a non-negative integer")


def reference_utc(value: object) -> None:
    if not isinstance(value, datetime) or value.utcoffset() != timedelta(0):
        raise InvalidInput("field must be a timezone-aware UTC datetime")


def reference_label(value: object) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_LABEL_LENGTH:
        raise InvalidInput(
            f"field must be a non-empty string of at most {MAX_LABEL_LENGTH} characters"
        )
    if _CONTROL.search(value):
        raise InvalidInput("field must not contain control characters")
    if _SURROGATE.search(value):
        raise InvalidInput("field must not contain lone surrogates")


def reference_namespace(value: object) -> None:
    if not isinstance(value, str) or len(value) > 1024:
        raise InvalidInput("field must be a string of at most 1024 characters")
    if _CONTROL.search(value) or _SURROGATE.search(value):
        raise InvalidInput("field must not contain control characters or surrogates")


def reference_text_field(
    value: object, *, max_length: int, single_line: bool, allow_empty: bool
) -> str:
    name = "field"
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{name} must not be empty")
    if len(value) > max_length:
        raise InvalidInput(f"{name} is longer than {max_length} characters")
    found = _NUL_OR_SURROGATE.search(value)
    if found is not None:
        what = "NUL characters" if found.group() == "\x00" else "lone surrogates"
        raise InvalidInput(f"{name} must not contain {what}")
    if single_line and _CONTROL.search(value.replace("\t", " ")):
        raise InvalidInput(f"{name} must not contain control characters")
    return value


# -- generated values -------------------------------------------------------------------

_ALPHABET = (
    "aZ09-_.:/#é漢"
    " \t\n\r\x0b\x0c\x1c\x1f\x00\x01\x7f\x80\x85\x9f\xa0"
    "\u2028\u3000\ufeff\ud800\udbff\udc00\udfff"
    "\u034f\u3164\ufe0f\u0600\U000e0020\U0001d173\U00013439\u200d"
)


def strings(rng: random.Random, count: int) -> Iterator[str]:
    yield from ("", " ", "\t", "a", "a\tb", "\x00", "\ud800", "x" * 128, "x" * 129)
    yield from ("x" * 512, "x" * 513, "x" * 1024, "x" * 1025)
    for _ in range(count):
        length = rng.choice((1, 2, 3, 5, 8, 36, 127, 128, 129, 511, 512, 513))
        plain = rng.random() < 0.5  # half mostly harmless, so the fast paths are taken
        if plain:
            chars = [rng.choice("abcXYZ019-_ .é") for _ in range(length)]
            if rng.random() < 0.3:
                chars[rng.randrange(length)] = rng.choice(_ALPHABET)
        else:
            chars = [rng.choice(_ALPHABET) for _ in range(length)]
        yield "".join(chars)


def values(rng: random.Random, count: int) -> Iterator[object]:
    for text in strings(rng, count):
        yield text
        if rng.random() < 0.1:
            yield Text(text)
    yield from (None, 0, 1, -1, True, False, 1.0, b"abc", Count(3), ["a"], object())


def _outcome(check: Callable[..., Any], *args: Any, **kwargs: Any) -> object:
    try:
        return ("ok", check(*args, **kwargs))
    except InvalidInput as exc:
        return ("refused", str(exc))


# -- the comparisons --------------------------------------------------------------------


def test_id_rule() -> None:
    for value in values(random.Random(1), 20_000):
        assert _outcome(model._check_id, None, Field, value) == _outcome(reference_id, value), repr(
            value
        )
        assert model.is_valid_id(value) == (_outcome(reference_id, value)[0] == "ok")


def test_no_id_holds_a_character_that_renders_as_nothing() -> None:
    """Every format character (Cf) and every default-ignorable one, in every position: an id
    with one would look like the id without it and name something else (ADR 0076)."""
    invisible = [
        chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and _invisible(chr(c))
    ]
    assert len(invisible) > 4000  # the tag and variation selector blocks among them
    for char in invisible:
        for value in (f"invoice-7{char}", f"{char}invoice-7", f"in{char}voice"):
            assert not model.is_valid_id(value), ascii(value)
            with pytest.raises(InvalidInput, match="invisible format"):
                model._check_id(None, Field, value)
    for kept in ("é漢-1", "a\ufffd", "a\ue000", "\U0001f600", "x\u0301"):  # visible, accepted
        assert model.is_valid_id(kept), ascii(kept)


def test_label_rule() -> None:
    for value in values(random.Random(2), 20_000):
        assert _outcome(model._check_label, None, Field, value) == _outcome(
            reference_label, value
        ), repr(value)


def test_namespace_rule() -> None:
    for value in values(random.Random(3), 10_000):
        assert _outcome(model._check_namespace, None, Field, value) == _outcome(
            reference_namespace, value
        ), repr(value)


@pytest.mark.parametrize("single_line", [True, False])
@pytest.mark.parametrize("allow_empty", [True, False])
def test_text_field_rule(single_line: bool, allow_empty: bool) -> None:
    for value in values(random.Random(4), 10_000):
        kwargs: dict[str, Any] = {
            "max_length": 128,
            "single_line": single_line,
            "allow_empty": allow_empty,
        }
        assert _outcome(check_text_field, "field", value, **kwargs) == _outcome(
            reference_text_field, value, **kwargs
        ), repr(value)


def reference_sha256(value: object) -> None:
    if not isinstance(value, str) or re.fullmatch(r"[0-9a-f]{64}", value) is None:
        raise InvalidInput("field must be 64 lowercase hex digits")


def test_sha256_rule() -> None:
    rng = random.Random(5)
    digest = "0123456789abcdef" * 4
    candidates: list[object] = [digest, Text(digest), digest + "\n", digest[:-1], digest.upper()]
    candidates += [" " + digest[1:], digest[:63] + "g", digest[:63] + "\u0660", None, 0, b"ab"]
    for _ in range(20_000):
        chars = list(digest)
        for _ in range(rng.choice((0, 0, 1, 2))):
            chars[rng.randrange(64)] = rng.choice("0f9aAF g\n\x00é" + _ALPHABET)
        candidates.append("".join(chars)[: rng.choice((64, 64, 64, 63))])
    for value in candidates:
        assert _outcome(model._check_sha256, None, Field, value) == _outcome(
            reference_sha256, value
        ), repr(value)


def test_non_negative_rule() -> None:
    for value in (0, 1, 2**40, -1, -(2**40), True, False, Count(0), Count(-1), 1.0, "1", None):
        assert _outcome(model._check_non_negative, None, Field, value) == _outcome(
            reference_non_negative, value
        ), repr(value)


def reference_counter(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"field must be a whole number, got {type(value).__name__}")
    if value < 0 or value > MAX_COUNTER:
        raise InvalidInput(f"field must be between 0 and {MAX_COUNTER}, got {value}")
    return value


def test_counter_rule() -> None:
    candidates: list[object] = [0, 1, 7, MAX_COUNTER, MAX_COUNTER + 1, -1, 2**70, -(2**70)]
    candidates += [True, False, Count(0), Count(-1), Count(MAX_COUNTER + 1), 1.0, "1", None]
    for value in candidates:
        assert _outcome(check_counter, "field", value) == _outcome(reference_counter, value), repr(
            value
        )


def test_utc_rule() -> None:
    now = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    candidates: list[object] = [
        now,
        now.replace(tzinfo=timezone(timedelta(0))),
        now.replace(tzinfo=timezone(timedelta(0), "Z")),
        now.replace(tzinfo=ZoneInfo("UTC")),
        now.replace(tzinfo=ZoneInfo("Europe/Paris")),
        now.replace(tzinfo=timezone(timedelta(hours=-5))),
        now.replace(tzinfo=None),
        Moment(2026, 12, 1, tzinfo=UTC),
        date(2026, 12, 1),
        "2026-12-01T09:30:00Z",
        None,
    ]
    for value in candidates:
        assert _outcome(model._check_utc, None, Field, value) == _outcome(reference_utc, value), (
            repr(value)
        )


def test_entity_refusals_keep_their_messages() -> None:
    now = datetime.now(UTC)
    with pytest.raises(InvalidInput, match="must not contain whitespace"):
        Scope("ac me")
    with pytest.raises(InvalidInput, match="must be a non-empty string of at most 128"):
        Scope("")
    with pytest.raises(InvalidInput, match="file name must not contain control characters"):
        model.FileItem(
            id="f",
            file_name="a\nb",
            mime_type="text/plain",
            size=0,
            sha256=model.EMPTY_SHA256,
            created_by="u",
            scope=Scope("m"),
            created_at=now,
            blob_key="k",
        )
    with pytest.raises(InvalidInput, match="size must be a non-negative integer"):
        model.FileItem(
            id="f",
            file_name="a",
            mime_type="text/plain",
            size=True,
            sha256=model.EMPTY_SHA256,
            created_by="u",
            scope=Scope("m"),
            created_at=now,
            blob_key="k",
        )


def test_keys_are_the_compact_json_hashes() -> None:
    rng = random.Random(5)
    for name in strings(rng, 2_000):
        scope = Scope("acme", None if rng.random() < 0.5 else "support")
        payload = json.dumps(
            ["a" * 64, name, "alice", scope.mandate_id, scope.feature_instance_id],
            ensure_ascii=False,
            separators=(",", ":"),
        )
        expected = model.hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()
        assert duplicate_key("a" * 64, name, "alice", scope) == expected
        space = json.dumps(
            [scope.mandate_id, scope.feature_instance_id, name],
            ensure_ascii=False,
            separators=(",", ":"),
        )
        assert (
            version_space_key(scope, name)
            == model.hashlib.sha256(space.encode("utf-8", "surrogatepass")).hexdigest()
        )


def test_tags_json_is_compact_ascii_json() -> None:
    rng = random.Random(6)
    tags = tuple(strings(rng, 300))
    assert rows._tags_to_json(tags) == json.dumps(
        list(tags), ensure_ascii=True, separators=(",", ":")
    )
    assert rows._tags_to_json(()) == "[]"


def test_ids_are_uuid4_text() -> None:
    rng = random.Random(7)
    samples = [bytes(16), b"\xff" * 16] + [rng.randbytes(16) for _ in range(20_000)]
    for raw in samples:
        assert uuid4_text(raw) == str(uuid.UUID(bytes=raw, version=4))
    with pytest.raises(ValueError, match="16 bytes"):
        uuid4_text(bytes(15))


def test_id_factory_gives_distinct_version_4_uuids(monkeypatch: pytest.MonkeyPatch) -> None:
    factory = UuidIdFactory()
    made = {factory.new_id() for _ in range(1_000)}
    assert len(made) == 1_000
    for text in made:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text
    # The randomness is os.urandom's, as for uuid.uuid4.
    monkeypatch.setattr("docbinder.adapters.system.os.urandom", lambda n: b"\x11" * n)
    assert factory.new_id() == str(uuid.UUID(bytes=b"\x11" * 16, version=4))


def reference_clean_label(label: object) -> str:
    if not isinstance(label, str):
        return model.DEFAULT_LABEL
    cleaned = _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", label))
    cleaned = unicodedata.normalize("NFC", cleaned)  # names that look the same: one label
    cleaned = cleaned[: MAX_LABEL_LENGTH - model.LABEL_SUFFIX_DIGITS - 1]
    return cleaned if cleaned.strip() else model.DEFAULT_LABEL


def reference_printable(text: str) -> str:
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def test_label_cleaning_rule() -> None:
    for value in values(random.Random(8), 20_000):
        assert model.clean_label(value) == reference_clean_label(value), repr(value)


def test_tool_result_names_are_escaped_as_the_character_rule_says() -> None:
    for text in strings(random.Random(9), 20_000):
        assert printable(text) == reference_printable(text), repr(text)
    assert printable("a\U0001f600\U000e0001") == "a\U0001f600\\U000e0001"


def test_a_str_subclass_saying_it_is_printable_meets_the_same_rules() -> None:
    for text in ("a\x00b", "a\x1fb", "a\ud800b", "tab\there", "a\x85b", "a\u2028b", "plain"):
        value = Printable(text)
        assert _outcome(model._check_id, None, Field, value) == _outcome(reference_id, value)
        assert _outcome(model._check_label, None, Field, value) == _outcome(
            reference_label, value
        ), repr(text)
        for single_line in (True, False):
            kwargs: dict[str, Any] = {
                "max_length": 128,
                "single_line": single_line,
                "allow_empty": False,
            }
            assert _outcome(check_text_field, "field", value, **kwargs) == _outcome(
                reference_text_field, value, **kwargs
            ), repr(text)
        assert model.clean_label(value) == reference_clean_label(value), repr(text)
        assert printable(value) == reference_printable(value), repr(text)
