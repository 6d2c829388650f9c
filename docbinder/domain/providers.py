"""Copies of FileItems in model providers' Files APIs (feature row B22, SPEC C22).

A FileItem's bytes reach a provider (OpenAI, Anthropic, Gemini) at most once
per :class:`ProviderCopyKey`: the content's SHA-256, the provider, the
account (the name the host gives the API key it uses) and the tenant (the
FileItem's mandate and feature instance). A :class:`ProviderCopy` records the
provider's file id and when the provider forgets it (``expires_at``; OpenAI
files may expire, Gemini files expire 48 hours after upload, Anthropic files
do not expire). The row is also the lock of the upload: it is inserted under
its key in state ``uploading`` with a claim token, so of several callers one
uploads and the others wait for it (ADR 0105).

Every upload is findable at the provider: the name it is uploaded under
carries the row's ``upload_token`` (:func:`marked_name`), so an upload whose
answer was lost is found again by listing the provider's files and adopted,
not uploaded a second time (ADR 0125).
"""

from __future__ import annotations

import enum
import re
from datetime import datetime, timedelta
from typing import Any

import attrs

from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import Scope, is_valid_id


class Provider(enum.StrEnum):
    """The model providers whose Files APIs docbinder hands files to."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


class CopyState(enum.StrEnum):
    """Where a provider copy is in its life.

    ``uploading``: a caller holds the claim and uploads; ``lost``: an upload
    ended without the provider's answer (cut connection, timeout, 5xx) and no
    copy named with its ``upload_token`` was found yet: no one uploads, the
    next caller looks again at the provider before it uploads (ADR 0125);
    ``ready``: the provider holds the file under ``file_id``; ``deleting``:
    its FileItem was deleted and the provider's copy is still to be deleted
    (retried by ``gc`` until the provider confirms).
    """

    UPLOADING = "uploading"
    LOST = "lost"
    READY = "ready"
    DELETING = "deleting"


def _check_id(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not is_valid_id(value):
        raise InvalidInput(f"{attribute.name} must be an id (1 to 128 printable characters)")


def _check_optional_text(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not 0 < len(value) <= 1024):
        raise InvalidInput(f"{attribute.name} must be a string of 1 to 1024 characters or None")


def _check_sha256(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not (isinstance(value, str) and len(value) == 64 and not value.strip("0123456789abcdef")):
        raise InvalidInput(f"{attribute.name} must be 64 lowercase hex digits")


def _check_utc(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, datetime) or value.utcoffset() != timedelta(0)):
        raise InvalidInput(f"{attribute.name} must be a timezone-aware UTC datetime")


_TOKEN = re.compile(r"^[A-Za-z0-9-]{1,64}\Z")


def _check_optional_token(
    _instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is not None and not (isinstance(value, str) and _TOKEN.match(value)):
        raise InvalidInput(f"{attribute.name} must be 1 to 64 letters, digits or dashes, or None")


MARKER = "~docbinder-"
"""What separates a file's name from its upload token in the name a provider keeps (ADR 0125)."""

_MARKED = re.compile(r"~docbinder-([A-Za-z0-9-]{1,64})(\.[A-Za-z0-9]{1,16})?\Z")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,16}$")
MAX_MARKED_NAME = 255
"""Longest name an upload is given, in characters (the shortest limit of the three providers' names)."""


def marked_name(file_name: str, token: str) -> str:
    """The name ``file_name`` is uploaded under: ``<stem>~docbinder-<token><suffix>``.

    The suffix (``.pdf``; 1 to 16 letters or digits) stays last, since the
    providers tell a file's type by it; the stem is shortened so the whole
    name has at most :data:`MAX_MARKED_NAME` characters. ``token`` is an
    upload token (1 to 64 letters, digits or dashes; :class:`InvalidInput`
    otherwise). :func:`token_of` reads it back.
    """
    if not _TOKEN.match(token):
        raise InvalidInput("an upload token must be 1 to 64 letters, digits or dashes")
    base = file_name.replace("/", "_").replace("\\", "_")
    found = _SUFFIX.search(base)
    suffix = found.group(0) if found is not None and found.start() > 0 else ""
    stem = base[: len(base) - len(suffix)] if suffix else base
    room = MAX_MARKED_NAME - len(MARKER) - len(token) - len(suffix)
    return f"{stem[:room]}{MARKER}{token}{suffix}"


def token_of(name: str | None) -> str | None:
    """The upload token a provider file's name carries (see :func:`marked_name`), or ``None``."""
    if not name:
        return None
    found = _MARKED.search(name)
    return None if found is None else found.group(1)


@attrs.frozen
class ProviderCopyKey:
    """What a provider copy is unique by: content, provider, account and tenant."""

    sha256: str = attrs.field(validator=_check_sha256)
    provider: Provider = attrs.field(converter=Provider)
    account: str = attrs.field(validator=_check_id)
    scope: Scope = attrs.field(validator=attrs.validators.instance_of(Scope))


@attrs.frozen
class ProviderCopy:
    """One FileItem content's copy at one provider, for one account and tenant.

    ``claim`` is the token of the caller that last claimed the row (to upload or
    to delete); every change of the row is a compare-and-set on it.
    ``claimed_at`` is when (UTC). ``file_id`` is the provider's id (OpenAI
    ``file-...``, Anthropic ``file_...``, Gemini ``files/...``), ``uri`` the
    Gemini file URI that ``file_data`` parts name (``None`` for the others).
    ``uploaded_at`` and ``expires_at`` (``None``: the provider keeps it until
    deleted) are UTC datetimes; ``size`` is in bytes. ``upload_token`` is
    the token the name of every upload of this row carries
    (:func:`marked_name`): set when the row is first claimed, kept when a
    caller takes a stale or lost upload over and when the row is marked
    ``deleting``, so the provider's copies of the row can be listed and told
    apart from every other file of the account (``None``: a row written
    before uploads were marked).
    """

    key: ProviderCopyKey
    state: CopyState = attrs.field(converter=CopyState)
    claim: str = attrs.field(validator=_check_id)
    claimed_at: datetime = attrs.field(validator=_check_utc)
    file_id: str | None = attrs.field(default=None, validator=_check_optional_text)
    uri: str | None = attrs.field(default=None, validator=_check_optional_text)
    uploaded_at: datetime | None = attrs.field(default=None, validator=_check_utc)
    expires_at: datetime | None = attrs.field(default=None, validator=_check_utc)
    size: int = attrs.field(default=0)
    upload_token: str | None = attrs.field(default=None, validator=_check_optional_token)

    def usable_at(self, now: datetime, margin: timedelta) -> bool:
        """Whether the copy is ready and the provider still keeps it ``margin`` after ``now``."""
        if self.state is not CopyState.READY or self.file_id is None:
            return False
        return self.expires_at is None or self.expires_at - margin > now


@attrs.frozen
class UploadedCopy:
    """A file the provider holds: its file id, URI (Gemini), expiry (UTC or ``None``) and name.

    What an upload answers, and what listing the provider's files finds
    (``name``: the name it keeps, ``None`` when the adapter does not say).
    """

    file_id: str
    uri: str | None = None
    expires_at: datetime | None = None
    name: str | None = None


@attrs.frozen
class ProviderFileRef:
    """A FileItem as a provider knows it: what a content block names (B22).

    ``file_id`` (and for Gemini ``uri``) is the provider's id of the copy;
    ``file_name``, ``mime_type`` and ``size`` (bytes) are the FileItem's.
    ``uploaded`` is ``True`` when this call uploaded the bytes, ``False`` when
    it reused a recorded copy.
    """

    provider: Provider
    account: str
    file_id: str
    file_name: str
    mime_type: str
    size: int
    uri: str | None = None
    expires_at: datetime | None = None
    uploaded: bool = False
