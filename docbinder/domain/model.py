"""Entities and value objects of docbinder (SPEC section 2).

All classes are ``attrs.frozen``: a change is a new value made with
``attrs.evolve``. Attribute names are snake_case; the wire format (camelCase,
e.g. ``fileId``, ``documentsLabel``) is produced by
:mod:`docbinder.serialization` only.

Ids are random UUID strings made by an id factory port; the domain accepts any
non-empty id without whitespace so that host platforms can bring their own.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs

from docbinder.domain.counters import WorkflowCounters
from docbinder.domain.errors import InvalidInput
from docbinder.domain.names import canonical

MAX_FILE_NAME_LENGTH = 1024
"""Longest accepted file name, in characters."""

MAX_LABEL_LENGTH = 512
"""Longest accepted ``documents_label``, in characters."""

MAX_MESSAGE_LENGTH = 4_000_000
"""Longest accepted ChatMessage text, in characters (fits every backend's text column)."""


CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""C0 and C1 control characters and DEL: exactly Unicode category Cc."""

SURROGATES = re.compile(r"[\ud800-\udfff]")
"""Lone surrogate code points: valid in a Python ``str``, storable by no backend (not UTF-8)."""

DEFAULT_LABEL = "agent_tool_output"
"""``documents_label`` used when a producer gives none."""

LABEL_SUFFIX_DIGITS = 8
"""Hex digits of the suffix a taken ``documents_label`` gets (``<label>#<8 hex>``, ADR 0004)."""


def clean_label(label: object) -> str:
    """A usable ``documents_label``: control characters become spaces, the length leaves room for a suffix.

    Labels are derived from file names (``writeFile:<name>``), which may hold a
    tab; the label rule forbids control characters, so they are replaced
    rather than letting the attach fail. A lone surrogate becomes U+FFFD; a
    label longer than ``MAX_LABEL_LENGTH - 9`` characters is cut so that
    :func:`suffixed_label` still fits; a non-string or blank label becomes
    :data:`DEFAULT_LABEL`. The label is kept in Unicode Normalization Form C
    (:func:`~docbinder.domain.names.canonical`, UAX #15): two names that look
    the same (``Ü`` typed, ``U`` + U+0308 from macOS) are one label, so the
    second attach under it gets the ``#<hex>`` suffix (ADR 0066).
    """
    if not isinstance(label, str):
        return DEFAULT_LABEL
    cleaned = label
    # str.isprintable: a subclass's own isprintable is not asked (it could say yes).
    if not str.isprintable(label):  # a printable str has no Cc or Cs character to replace
        cleaned = CONTROL_CHARACTERS.sub(" ", cleaned)
        # A lone surrogate (from a badly decoded name) cannot be stored: U+FFFD instead.
        cleaned = SURROGATES.sub("\ufffd", cleaned)
    if not cleaned.isascii():
        cleaned = canonical(cleaned)
    cleaned = cleaned[: MAX_LABEL_LENGTH - LABEL_SUFFIX_DIGITS - 1]
    return cleaned if cleaned.strip() else DEFAULT_LABEL


def suffixed_label(label: str, token: str) -> str:
    """``<label>#<first 8 hex digits of token>``: the label of a message whose label was taken.

    ``token`` is a fresh random id (its dashes are dropped); see ADR 0004 for
    why a random suffix and not a counter.
    """
    return f"{label}#{token.replace('-', '')[:LABEL_SUFFIX_DIGITS]}"


_DEFAULT_IGNORABLE: Final = (
    r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
"""Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt, Unicode 15.1): what
renders as nothing, whatever its category (joiners, variation selectors, Hangul fillers, tags)."""

_OTHER_FORMAT: Final = (
    r"\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\ufff9-\ufffb"
    r"\U000110bd\U000110cd\U00013430-\U0001343f"
)
"""The format characters (general category Cf) that are not default-ignorable: prepended
concatenation marks, interlinear annotation and Egyptian hieroglyph format controls."""

_BAD_ID_CHAR_RE = re.compile(
    r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff" + _DEFAULT_IGNORABLE + _OTHER_FORMAT + r"]"
)
"""What an id may not hold: whitespace, control characters (C0, DEL, C1), lone surrogates,
every format character (category Cf: soft hyphen, zero-width and joiner characters, bidi marks
and embeddings, word joiner, BOM, tags) and every other default-ignorable character
(combining grapheme joiner, variation selectors, Hangul fillers): an id that looks like
another must not name another thing."""
_CONTROL_OR_SURROGATE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""What :data:`CONTROL_CHARACTERS` or :data:`SURROGATES` finds, in one search."""
_SINGLE_LINE_REFUSED = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")
"""Every character a single-line text field refuses (NUL, lone surrogates, Cc except tab)."""

_LOWER_HEX = "0123456789abcdef"
# type/subtype (RFC 6838 §4.2), optionally with the one parameter docbinder keeps: the
# declared ``charset`` of a text format (RFC 2046 §4.1.2), e.g. ``text/csv; charset=gbk``.
_MIME_RE = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*"
    r"(?:; ?charset=[A-Za-z0-9][A-Za-z0-9!#$%&'+^_`{}~.-]{0,39})?$"
)

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
"""SHA-256 of zero bytes (FIPS 180-4)."""


def _id_problem(name: str, value: object) -> str | None:
    if not isinstance(value, str) or not value or len(value) > 128:
        return f"{name} must be a non-empty string of at most 128 characters"
    if _BAD_ID_CHAR_RE.search(value):
        return (
            f"{name} must not contain whitespace, control, invisible format characters "
            "or lone surrogates"
        )
    return None


def _check_id(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # Fast path for the usual value, a plain ASCII str that passes; anything else is judged
    # (and its message built) by _id_problem. A printable ASCII str holds no character of
    # _BAD_ID_CHAR_RE but the space (str.isprintable() is false for every ASCII control);
    # beyond ASCII some printable characters render as nothing (U+034F, U+3164), so
    # those are looked for by the regular expression.
    if (
        type(value) is str
        and 0 < len(value) <= 128
        and value.isascii()
        and value.isprintable()
        and " " not in value
    ):
        return
    problem = _id_problem(attribute.name, value)
    if problem is not None:
        raise InvalidInput(problem)


def is_valid_id(value: object) -> bool:
    """Whether ``value`` could be an entity id (the rule every id attribute is validated with)."""
    return _id_problem("id", value) is None


SHOWN_ID_LENGTH = 80
"""Most characters of a refused id that a message quotes."""


def shown_id(value: object) -> str:
    """``value`` as a message quotes an id: ASCII (``ascii()``), at most :data:`SHOWN_ID_LENGTH` characters.

    NUL, lone surrogates and other controls appear escaped (``'f\\x00'``),
    so a message can always be printed and logged; a longer text ends in
    ``...`` and its length in characters.
    """
    if not isinstance(value, str):
        return f"<{type(value).__name__}>"
    if len(value) > SHOWN_ID_LENGTH:
        return f"{value[:SHOWN_ID_LENGTH]!a}... ({len(value)} characters)"
    return ascii(value)


def _check_optional_id(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _check_id(instance, attribute, value)


def check_file_name(value: object) -> str:
    """Return ``value`` if it is an acceptable file name, else raise :class:`InvalidInput`.

    Accepted: any non-empty string of at most :data:`MAX_FILE_NAME_LENGTH`
    characters without NUL or other C0/C1 control characters (except tab). Path
    separators, ``..`` and any Unicode are accepted: the name is metadata and
    never steers where a blob is stored (SPEC C1). The name is kept exactly as
    given; no Unicode normalisation is applied.
    """
    if not isinstance(value, str) or not value:
        raise InvalidInput("file name must be a non-empty string")
    check_text_field("file name", value, max_length=MAX_FILE_NAME_LENGTH, allow_empty=True)
    return value


def _check_file_name(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    check_file_name(value)


def _check_mime(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not _MIME_RE.match(value) or len(value) > 255:
        raise InvalidInput(f"{attribute.name} must be a MIME type like 'text/plain', got {value!r}")


def _check_sha256(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # Exactly 64 characters, each a lowercase hex digit (strip removes them all).
    if isinstance(value, str) and len(value) == 64 and not value.strip(_LOWER_HEX):
        return
    raise InvalidInput(f"{attribute.name} must be 64 lowercase hex digits")


def _check_non_negative(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is int and value >= 0:  # the usual value; bool and other types go on
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput(f"{attribute.name} must be a non-negative integer")


_ZERO = timedelta(0)


def _check_utc(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # A plain datetime in datetime.UTC has offset zero; other values are asked for theirs.
    if type(value) is datetime and value.tzinfo is UTC:
        return
    if not isinstance(value, datetime) or value.utcoffset() != _ZERO:
        raise InvalidInput(f"{attribute.name} must be a timezone-aware UTC datetime")


def _check_label(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_LABEL_LENGTH:
        raise InvalidInput(
            f"{attribute.name} must be a non-empty string of at most {MAX_LABEL_LENGTH} characters"
        )
    # A printable str holds no Cc or Cs character; other strings are searched. (str.isprintable,
    # not value.isprintable: a subclass of str may answer for itself.)
    if str.isprintable(value) or _CONTROL_OR_SURROGATE.search(value) is None:
        return
    if CONTROL_CHARACTERS.search(value):
        raise InvalidInput(f"{attribute.name} must not contain control characters")
    if SURROGATES.search(value):
        raise InvalidInput(f"{attribute.name} must not contain lone surrogates")


def _check_word(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > 64:
        raise InvalidInput(f"{attribute.name} must be a non-empty string of at most 64 characters")


MAX_FOLDER_LENGTH = 1024
"""Longest accepted ``FileItem.folder``, in characters."""

MAX_TAG_LENGTH = 255
"""Longest accepted tag, in characters."""

MAX_TAGS = 100
"""Most tags one FileItem carries."""

_NUL_OR_SURROGATE = re.compile(r"[\x00\ud800-\udfff]")


def check_text_field(
    name: str,
    value: object,
    *,
    max_length: int,
    single_line: bool = True,
    allow_empty: bool = False,
) -> str:
    """Return ``value`` if every backend stores it unchanged, else raise :class:`InvalidInput`.

    The one rule for every text field (ADR 0018), applied before any blob is written so
    memory, SQLite, PostgreSQL and MariaDB give the same answer:

    * a ``str`` of at most ``max_length`` characters (code points), non-empty unless
      ``allow_empty`` (whitespace alone counts as empty);
    * no U+0000 (PostgreSQL ``text`` rejects it) and no lone surrogates (not UTF-8, so
      no backend can store them);
    * when ``single_line`` (names, labels, folders, tags): no other C0/C1 control
      character (Unicode category Cc) either, except tab. Message text may hold
      line breaks and other controls but not NUL.

    The value is never altered: no normalisation, no stripping.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{name} must not be empty")
    if len(value) > max_length:
        raise InvalidInput(f"{name} is longer than {max_length} characters")
    # No Cc or Cs character in a printable str; else one search clears the two below.
    if single_line and (str.isprintable(value) or _SINGLE_LINE_REFUSED.search(value) is None):
        return value
    found = _NUL_OR_SURROGATE.search(value)
    if found is not None:
        what = "NUL characters" if found.group() == "\x00" else "lone surrogates"
        raise InvalidInput(f"{name} must not contain {what}")
    if single_line and CONTROL_CHARACTERS.search(value.replace("\t", " ")):
        raise InvalidInput(f"{name} must not contain control characters")
    return value


def check_file_metadata(folder: object, tags: object) -> tuple[str | None, tuple[str, ...]]:
    """Check ``folder`` (``None`` or a text field) and ``tags`` (at most :data:`MAX_TAGS`).

    Returns them as stored (tags as a tuple); raises :class:`InvalidInput` naming the
    field. Rules: :func:`check_text_field`, single line (an empty tag is allowed).
    """
    if folder is not None:
        check_text_field("folder", folder, max_length=MAX_FOLDER_LENGTH)
    if isinstance(tags, (str, bytes)) or not isinstance(tags, (list, tuple)):
        raise InvalidInput("tags must be a list of strings")
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"at most {MAX_TAGS} tags")
    for tag in tags:
        check_text_field("tag", tag, max_length=MAX_TAG_LENGTH, allow_empty=True)
    return folder, tuple(tags)  # type: ignore[return-value]


def check_message_text(value: object, name: str = "message") -> str:
    """ChatMessage text: :func:`check_text_field` with line breaks, may be empty."""
    return check_text_field(
        name, value, max_length=MAX_MESSAGE_LENGTH, single_line=False, allow_empty=True
    )


def _check_text(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # Entities are also built from stored rows: only what no backend can hold is refused
    # here, so a row written before the text rule still loads. New text goes through
    # check_message_text at the use case's input.
    if not isinstance(value, str) or len(value) > MAX_MESSAGE_LENGTH:
        raise InvalidInput(
            f"{attribute.name} must be a string of at most {MAX_MESSAGE_LENGTH} characters"
        )
    if SURROGATES.search(value):
        raise InvalidInput(f"{attribute.name} must not contain lone surrogates")


def _to_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


@attrs.frozen
class Scope:
    """Where a FileItem or workflow lives: a tenant (mandate) and optionally a feature instance."""

    mandate_id: str = attrs.field(validator=_check_id)
    feature_instance_id: str | None = attrs.field(default=None, validator=_check_optional_id)

    def __str__(self) -> str:
        if self.feature_instance_id is None:
            return self.mandate_id
        return f"{self.mandate_id}/{self.feature_instance_id}"


class Role(enum.StrEnum):
    """Roles of the default role-table authorizer (SPEC C11)."""

    VIEWER = "viewer"
    MEMBER = "member"
    ADMIN = "admin"


@attrs.frozen
class Principal:
    """Who calls: a user acting in a mandate, optionally inside one feature instance.

    ``roles`` is a tuple of role names; the role-table authorizer knows
    ``viewer``, ``member`` and ``admin``, other authorizers may use others.
    """

    user_id: str = attrs.field(validator=_check_id)
    mandate_id: str = attrs.field(validator=_check_id)
    feature_instance_id: str | None = attrs.field(default=None, validator=_check_optional_id)
    roles: tuple[str, ...] = attrs.field(default=("member",), converter=_to_tuple)

    @functools.cached_property
    def scope(self) -> Scope:
        """The scope this principal works in: its mandate and feature instance (built once)."""
        return Scope(self.mandate_id, self.feature_instance_id)


MAX_PROVENANCE_TEXT = 255
"""Longest tool name, tool call id, run id or model name a :class:`Provenance` keeps, in characters."""

MAX_PROVENANCE_PARENTS = 100
"""Most parent files one :class:`Provenance` names; a run that read more keeps the last ones."""

MAX_PROVENANCE_PATH = 4096
"""Longest ``source_path`` a :class:`Provenance` keeps, in characters (Linux ``PATH_MAX``)."""


def _check_provenance_text(
    _instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is not None:
        check_text_field(f"provenance {attribute.name}", value, max_length=MAX_PROVENANCE_TEXT)


def _check_provenance_path(
    _instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is not None:
        check_text_field(f"provenance {attribute.name}", value, max_length=MAX_PROVENANCE_PATH)


def _check_optional_sha256(
    instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is not None:
        _check_sha256(instance, attribute, value)


def _check_parents(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if len(value) > MAX_PROVENANCE_PARENTS:  # type: ignore[arg-type]
        raise InvalidInput(f"provenance names at most {MAX_PROVENANCE_PARENTS} parent files")
    for parent in value:  # type: ignore[attr-defined]
        _check_id(None, attribute, parent)


def canonical_json(value: object) -> bytes:
    """``value`` as canonical JSON bytes: sorted keys, no spaces, UTF-8, no NaN.

    The encoding of RFC 8785's spirit that Python's ``json`` gives: keys sorted by
    code point, separators ``,`` and ``:``, non-ASCII kept as UTF-8. Values JSON
    cannot hold are written with ``str`` (so any tool arguments have a digest).
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode("utf-8", "surrogatepass")


def arguments_sha256(arguments: object) -> str:
    """SHA-256 hex of the tool arguments' :func:`canonical_json` (FIPS 180-4).

    A JSON text is parsed first, so ``'{"a": 1}'`` and ``{"a": 1}`` have one digest;
    text that is no JSON is hashed as a JSON string. The arguments themselves are
    never kept (feature row B9). :class:`InvalidInput` for arguments JSON cannot
    encode (nested deeper than the interpreter's recursion limit).
    """
    if isinstance(arguments, str | bytes):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = (
                arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
            )
    try:
        encoded = canonical_json(arguments)
    except (RecursionError, ValueError, TypeError) as exc:  # nested deeper than the encoder goes
        raise InvalidInput(
            f"the arguments cannot be encoded as JSON: {type(exc).__name__}"
        ) from None
    return hashlib.sha256(encoded).hexdigest()


@attrs.frozen
class Provenance:
    """Where a FileItem came from (feature row B9): the producing step, never a guess.

    ``tool`` is the producing tool's name (``None``: the producer declared
    nothing); ``tool_call_id`` and ``model`` what the host gave for the call
    (``None`` when it gives none); ``args_sha256`` the SHA-256 hex of the
    call's arguments in :func:`canonical_json` (:func:`arguments_sha256`; the
    arguments are never stored); ``run_id`` the agent run; ``workflow_id`` the
    workflow the run was bound to; ``message_id`` the ChatMessage that
    attached the file when it was produced (``None``: stored without an
    attach, or the attach did not happen); ``parents`` the ids of the files
    the run (ADR 0094) had read before producing this one, in the order first read (at most
    :data:`MAX_PROVENANCE_PARENTS`). For a file harvested from a sandbox or
    code-execution container (:mod:`docbinder.harvest`), ``sandbox_id`` names
    the sandbox (a container id, a code executor, an output directory) and
    ``source_path`` the file's path inside it, as the sandbox wrote it (at most
    :data:`MAX_PROVENANCE_PATH` characters). Other text fields are single-line
    text of at most :data:`MAX_PROVENANCE_TEXT` characters; :class:`InvalidInput`
    otherwise.
    """

    tool: str | None = attrs.field(default=None, validator=_check_provenance_text)
    tool_call_id: str | None = attrs.field(default=None, validator=_check_provenance_text)
    args_sha256: str | None = attrs.field(default=None, validator=_check_optional_sha256)
    run_id: str | None = attrs.field(default=None, validator=_check_provenance_text)
    workflow_id: str | None = attrs.field(default=None, validator=_check_optional_id)
    model: str | None = attrs.field(default=None, validator=_check_provenance_text)
    message_id: str | None = attrs.field(default=None, validator=_check_optional_id)
    parents: tuple[str, ...] = attrs.field(
        default=(), converter=_to_tuple, validator=_check_parents
    )
    sandbox_id: str | None = attrs.field(default=None, validator=_check_provenance_text)
    source_path: str | None = attrs.field(default=None, validator=_check_provenance_path)

    @property
    def declared(self) -> bool:
        """Whether any field is set (``False`` for a producer that declared nothing)."""
        return self != NO_PROVENANCE


NO_PROVENANCE = Provenance()
"""The provenance of a FileItem whose producer declared nothing: every field ``None``."""


@attrs.frozen
class FileItem:
    """A stored file: metadata of one blob (SPEC C1).

    ``size`` is in bytes, ``sha256`` is the lowercase hex digest of the bytes,
    ``created_by`` is the creating user's id (``sysCreatedBy`` on the original
    platform), ``blob_key`` is the blob store key (made from ids only).
    ``folder`` and ``tags`` are per-scope metadata. ``blob_store`` is the
    identity of the blob store that holds the bytes (persisted inside that
    store, see :meth:`~docbinder.ports.blobs.BlobStore.identity`); ``None`` for
    a FileItem stored before stores had identities. ``provenance`` says which
    tool, call and run produced it and from which files (:class:`Provenance`;
    :data:`NO_PROVENANCE` when the producer declared nothing).
    """

    id: str = attrs.field(validator=_check_id)
    file_name: str = attrs.field(validator=_check_file_name)
    mime_type: str = attrs.field(validator=_check_mime)
    size: int = attrs.field(validator=_check_non_negative)
    sha256: str = attrs.field(validator=_check_sha256)
    created_by: str = attrs.field(validator=_check_id)
    scope: Scope = attrs.field(validator=attrs.validators.instance_of(Scope))
    created_at: datetime = attrs.field(validator=_check_utc)
    blob_key: str = attrs.field(validator=_check_id)
    folder: str | None = attrs.field(default=None)
    tags: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple)
    blob_store: str | None = attrs.field(default=None)
    provenance: Provenance = attrs.field(
        default=NO_PROVENANCE, validator=attrs.validators.instance_of(Provenance)
    )


@attrs.frozen
class ChatDocument:
    """A FileItem attached to a workflow message; ``docItem:<id>`` points at it (SPEC C3).

    ``file_name``, ``file_size`` (bytes) and ``mime_type`` record the file as it
    was when attached, like the attachment line of a sent message; a later
    update of the FileItem (``binder.update_file``) does not rewrite them.
    Resolving returns the current FileItem next to the document.
    """

    id: str = attrs.field(validator=_check_id)
    message_id: str = attrs.field(validator=_check_id)
    workflow_id: str = attrs.field(validator=_check_id)
    file_id: str = attrs.field(validator=_check_id)
    file_name: str = attrs.field(validator=_check_file_name)
    file_size: int = attrs.field(validator=_check_non_negative)
    mime_type: str = attrs.field(validator=_check_mime)
    round_number: int = attrs.field(default=0, validator=_check_non_negative)
    task_number: int = attrs.field(default=0, validator=_check_non_negative)
    action_number: int = attrs.field(default=0, validator=_check_non_negative)

    @property
    def reference(self) -> str:
        """The canonical reference for ``documentList``: ``docItem:<id>``."""
        return f"docItem:{self.id}"

    @classmethod
    def for_file(
        cls, item: FileItem, *, document_id: str, message_id: str, workflow: ChatWorkflow
    ) -> ChatDocument:
        """The ChatDocument that attaches ``item`` to message ``message_id`` of ``workflow``.

        It records the file's name, size and MIME type as they are now, and the
        workflow's current round, task and action numbers (SPEC C3). Raises
        :class:`InvalidInput` for an invalid ``document_id`` or ``message_id``.
        """
        if cls is ChatDocument and type(item) is FileItem and type(workflow) is ChatWorkflow:
            # The usual case: every field but the two new ids comes from an entity whose
            # own validators passed, so only those two are checked; the copy equals what
            # the constructor would build, without validating the rest again.
            _check_id(None, _DOCUMENT_ID, document_id)
            _check_id(None, _DOCUMENT_MESSAGE_ID, message_id)
            document = object.__new__(ChatDocument)
            for name, value in (
                ("id", document_id),
                ("message_id", message_id),
                ("workflow_id", workflow.id),
                ("file_id", item.id),
                ("file_name", item.file_name),
                ("file_size", item.size),
                ("mime_type", item.mime_type),
                ("round_number", workflow.current_round),
                ("task_number", workflow.current_task),
                ("action_number", workflow.current_action),
            ):
                object.__setattr__(document, name, value)
            return document
        return cls(
            id=document_id,
            message_id=message_id,
            workflow_id=workflow.id,
            file_id=item.id,
            file_name=item.file_name,
            file_size=item.size,
            mime_type=item.mime_type,
            round_number=workflow.current_round,
            task_number=workflow.current_task,
            action_number=workflow.current_action,
        )


@attrs.frozen
class ChatMessage:
    """A workflow message that carries ChatDocuments (SPEC C3).

    ``documents_label`` is unique within the workflow; ``sequence_nr`` orders
    messages of one workflow; ``published_at`` is UTC.
    """

    id: str = attrs.field(validator=_check_id)
    workflow_id: str = attrs.field(validator=_check_id)
    documents_label: str = attrs.field(validator=_check_label)
    published_at: datetime = attrs.field(validator=_check_utc)
    role: str = attrs.field(default="assistant", validator=_check_word)
    status: str = attrs.field(default="step", validator=_check_word)
    message: str = attrs.field(default="", validator=_check_text)
    documents: tuple[ChatDocument, ...] = attrs.field(default=(), converter=_to_tuple)
    round_number: int = attrs.field(default=0, validator=_check_non_negative)
    task_number: int = attrs.field(default=0, validator=_check_non_negative)
    action_number: int = attrs.field(default=0, validator=_check_non_negative)
    sequence_nr: int = attrs.field(default=0, validator=_check_non_negative)

    def __attrs_post_init__(self) -> None:
        for doc in self.documents:
            if doc.message_id != self.id or doc.workflow_id != self.workflow_id:
                raise InvalidInput("a ChatDocument must name its own message and workflow")

    @classmethod
    def attaching(
        cls,
        workflow: ChatWorkflow,
        items: Sequence[FileItem],
        *,
        message_id: str,
        document_ids: Sequence[str],
        label: str,
        published_at: datetime,
        role: str = "assistant",
        user_message: str = "",
    ) -> ChatMessage:
        """A ``step`` message of ``workflow`` that attaches ``items``, one ChatDocument each.

        ``document_ids`` gives one new id per item, in order; the documents are
        built by :meth:`ChatDocument.for_file`, and the message carries the
        workflow's current round, task and action numbers. Raises
        :class:`InvalidInput` when the numbers of ids and items differ or a
        field breaks its rule.
        """
        if len(document_ids) != len(items):
            raise InvalidInput("a ChatMessage needs one document id per attached file")
        return cls(
            id=message_id,
            workflow_id=workflow.id,
            documents_label=label,
            published_at=published_at,
            role=role,
            status="step",
            message=user_message,
            documents=tuple(
                ChatDocument.for_file(
                    item, document_id=document_id, message_id=message_id, workflow=workflow
                )
                for item, document_id in zip(items, document_ids, strict=True)
            ),
            round_number=workflow.current_round,
            task_number=workflow.current_task,
            action_number=workflow.current_action,
        )

    @property
    def counters(self) -> WorkflowCounters:
        """The round, task and action numbers this message carries."""
        return WorkflowCounters(self.round_number, self.task_number, self.action_number)

    def placed(self, sequence_nr: int, counters: WorkflowCounters) -> ChatMessage:
        """This message as stored: number ``sequence_nr`` at the workflow position ``counters``.

        The message and each of its documents carry ``counters`` (ADR 0026:
        what is attached carries the workflow's position at the moment its
        message got its number); documents that already do are kept as they are.
        """
        r, t, a = counters.as_tuple()
        if (
            type(self) is ChatMessage
            and (self.round_number, self.task_number, self.action_number) == (r, t, a)
            and all(
                (doc.round_number, doc.task_number, doc.action_number) == (r, t, a)
                for doc in self.documents
            )
        ):
            # The usual case: only the number is new (and the class is this one, whose
            # fields are all copied below). Every other field was validated
            # when this message was built, so only the number is checked; a copy with it
            # replaced equals what ``attrs.evolve`` would build, without re-validating
            # every field and document.
            _check_non_negative(self, _SEQUENCE_NR, sequence_nr)
            placed = object.__new__(ChatMessage)
            for name in _MESSAGE_FIELDS:
                object.__setattr__(placed, name, getattr(self, name))
            object.__setattr__(placed, "sequence_nr", sequence_nr)
            return placed
        documents = tuple(
            doc
            if (doc.round_number, doc.task_number, doc.action_number) == (r, t, a)
            else attrs.evolve(doc, round_number=r, task_number=t, action_number=a)
            for doc in self.documents
        )
        return attrs.evolve(
            self,
            documents=documents,
            sequence_nr=sequence_nr,
            round_number=r,
            task_number=t,
            action_number=a,
        )

    def with_label_suffix(self, token: str) -> ChatMessage:
        """This message under :func:`suffixed_label` ``(documents_label, token)`` (ADR 0004)."""
        return attrs.evolve(self, documents_label=suffixed_label(self.documents_label, token))


_SEQUENCE_NR = attrs.fields(ChatMessage).sequence_nr
_DOCUMENT_ID = attrs.fields(ChatDocument).id
_DOCUMENT_MESSAGE_ID = attrs.fields(ChatDocument).message_id
_MESSAGE_FIELDS = tuple(field.name for field in attrs.fields(ChatMessage))


@attrs.frozen
class ChatWorkflow:
    """An agent run's conversation state (SPEC C3/C4).

    ``messages`` holds the messages known to this object: a repository may load
    the workflow without them; the run context appends the messages it creates.
    """

    id: str = attrs.field(validator=_check_id)
    scope: Scope = attrs.field(validator=attrs.validators.instance_of(Scope))
    created_by: str = attrs.field(validator=_check_id)
    created_at: datetime = attrs.field(validator=_check_utc)
    status: str = attrs.field(default="running", validator=_check_word)
    current_round: int = attrs.field(default=1, validator=_check_non_negative)
    current_task: int = attrs.field(default=0, validator=_check_non_negative)
    current_action: int = attrs.field(default=0, validator=_check_non_negative)
    messages: tuple[ChatMessage, ...] = attrs.field(default=(), converter=_to_tuple)

    @property
    def counters(self) -> WorkflowCounters:
        """``current_round``, ``current_task`` and ``current_action`` as one value (ADR 0026)."""
        return WorkflowCounters(self.current_round, self.current_task, self.current_action)


class ContentKind(enum.StrEnum):
    """What a :class:`ContentPart` carries."""

    TEXT = "text"
    IMAGE = "image"
    BINARY = "binary"


MAX_LISTED_PAGES = 100
"""Most page numbers a :class:`PageCoverage` lists in ``empty_pages``."""


@attrs.frozen
class PageCoverage:
    """How the pages of a paged document (PDF, image, multi-page TIFF) were read.

    ``pages`` is the document's page count; of those, ``text_layer`` pages gave
    text from their text layer, ``ocr`` pages text from optical character
    recognition, ``nothing`` pages were read and gave no text at all (no text
    layer, and OCR found nothing or is not installed), and ``unread`` pages
    were not reached (a page, time or size limit; the part then says
    ``truncated``). ``empty_pages`` lists the numbers (from 1) of the
    ``nothing`` pages, at most :data:`MAX_LISTED_PAGES` of them.
    """

    pages: int = attrs.field(validator=_check_non_negative)
    text_layer: int = attrs.field(default=0, validator=_check_non_negative)
    ocr: int = attrs.field(default=0, validator=_check_non_negative)
    nothing: int = attrs.field(default=0, validator=_check_non_negative)
    unread: int = attrs.field(default=0, validator=_check_non_negative)
    empty_pages: tuple[int, ...] = attrs.field(default=(), converter=_to_tuple)

    @property
    def complete(self) -> bool:
        """Whether every page gave text (from its text layer or OCR)."""
        return self.text_layer + self.ocr == self.pages


@attrs.frozen
class ContentPart:
    """What a consuming tool receives for a resolved document (SPEC C8).

    ``text`` is set for text parts; ``data`` (raw bytes) for image and binary
    parts; ``size`` is the size in bytes of the underlying file; ``position``
    names a page (``"page 3"``), sheet (``"sheet 2: Totals"``) or slide
    (``"slide 4"``) where the extractor knows it.

    ``truncated`` says a limit cut the content (size, characters, pages,
    decoded bytes or the time budget); ``truncated_reason`` then says which, in
    one sentence. ``note`` explains a part that is not the document's text
    (conversion failed, the extra that adds the format is not installed).
    ``encoding`` is the text encoding the bytes were decoded with (Python codec
    name, e.g. ``"gbk"``) for text read from text files; ``encoding_guessed``
    is true when it was detected from the bytes rather than declared by the
    producer or marked by a byte order mark (or implied by valid UTF-8).

    ``ocr`` is true for text read by optical character recognition from a page
    without a text layer or from an image; ``ocr_engine`` then names the engine
    and its language data (``"tesseract 5.5.4 (eng)"``) and ``ocr_confidence``
    is the engine's mean word confidence, from 0.0 to 1.0. ``coverage``, on
    every part of a paged document (PDF, image), says how its pages were read
    (:class:`PageCoverage`), so a page is never silently empty.
    """

    document_id: str = attrs.field(validator=_check_id)
    file_name: str
    mime_type: str
    kind: ContentKind = attrs.field(converter=ContentKind)
    text: str | None = None
    data: bytes | None = None
    size: int = 0
    position: str | None = None
    truncated: bool = False
    truncated_reason: str | None = None
    note: str | None = None
    encoding: str | None = None
    encoding_guessed: bool = False
    ocr: bool = False
    ocr_engine: str | None = None
    ocr_confidence: float | None = None
    coverage: PageCoverage | None = None


_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""What ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` uses, made once."""


def duplicate_key(sha256: str, file_name: str, created_by: str, scope: Scope) -> str:
    """The key two FileItems share when one duplicates the other (SPEC C2).

    SHA-256 (hex) of the JSON array ``[sha256, file_name, created_by,
    mandate_id, feature_instance_id]``; a fixed 64-character string, so SQL
    backends can put a unique index on it whatever the file name's length.
    """
    payload = _COMPACT_JSON.encode(
        [sha256, file_name, created_by, scope.mandate_id, scope.feature_instance_id]
    )
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


MAX_VERSION_METADATA_BYTES = 65_536
"""Longest accepted user metadata of a file version, in bytes of its compact JSON (UTF-8)."""


def _check_json_object(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, dict):
        raise InvalidInput(f"{attribute.name} must be a JSON object (a dict)")
    try:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{attribute.name} must be JSON-serialisable: {exc}") from exc
    if len(text) > MAX_VERSION_METADATA_BYTES:
        raise InvalidInput(
            f"{attribute.name} is longer than {MAX_VERSION_METADATA_BYTES} bytes as JSON"
        )


def _check_namespace(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or len(value) > MAX_FILE_NAME_LENGTH:
        raise InvalidInput(
            f"{attribute.name} must be a string of at most {MAX_FILE_NAME_LENGTH} characters"
        )
    if _CONTROL_OR_SURROGATE.search(value):
        raise InvalidInput(f"{attribute.name} must not contain control characters or surrogates")


def _copy_json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput("version metadata must be a JSON object (a dict)")
    copied: dict[str, Any] = json.loads(json.dumps(value, allow_nan=False, default=_no_json))
    return copied


def _no_json(value: object) -> None:
    raise InvalidInput(f"version metadata must be JSON-serialisable, got {type(value).__name__}")


@attrs.frozen
class VersionSeries:
    """One versioned file name: the name in a scope and a namespace (feature row B1).

    ``namespace`` separates series of the same name in one scope (``""`` is
    the default; a host uses it for its own sub-scopes, e.g. one per user or
    session). Versions of a series are numbered 0, 1, 2, ... in save order.
    """

    scope: Scope = attrs.field(validator=attrs.validators.instance_of(Scope))
    name: str = attrs.field(validator=_check_file_name)
    namespace: str = attrs.field(default="", validator=_check_namespace)

    @property
    def key(self) -> str:
        """SHA-256 hex of the JSON array ``[mandate_id, feature_instance_id, namespace, name]``.

        A fixed 64-character string, so the (key, version) unique index fits
        every backend whatever the name's length.
        """
        return _json_hash([*self.space, self.name])

    @property
    def space(self) -> tuple[str, str | None, str]:
        """``(mandate_id, feature_instance_id, namespace)``: where the series' name lives."""
        return (self.scope.mandate_id, self.scope.feature_instance_id, self.namespace)

    @property
    def space_key(self) -> str:
        """SHA-256 hex of the JSON array ``[mandate_id, feature_instance_id, namespace]``."""
        return version_space_key(self.scope, self.namespace)


def version_space_key(scope: Scope, namespace: str = "") -> str:
    """The key all series of one (scope, namespace) share; lists their names through an index."""
    return _json_hash([scope.mandate_id, scope.feature_instance_id, namespace])


def _json_hash(values: list[str | None]) -> str:
    payload = _COMPACT_JSON.encode(values)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class FileVersion:
    """Version ``version`` of a :class:`VersionSeries`: it is the FileItem ``file_id`` (B1).

    ``user_metadata`` is the caller's JSON object (at most
    :data:`MAX_VERSION_METADATA_BYTES` as JSON); ``host_data`` a second JSON
    object an integration keeps for itself (e.g. how to rebuild the host's
    value from the bytes). Both are deep-copied on construction. The creation
    time, MIME type and size are the FileItem's.
    """

    file_id: str = attrs.field(validator=_check_id)
    series: VersionSeries = attrs.field(validator=attrs.validators.instance_of(VersionSeries))
    version: int = attrs.field(validator=_check_non_negative)
    user_metadata: dict[str, Any] = attrs.field(
        factory=dict, converter=_copy_json_object, validator=_check_json_object, hash=False
    )
    host_data: dict[str, Any] = attrs.field(
        factory=dict, converter=_copy_json_object, validator=_check_json_object, hash=False
    )
