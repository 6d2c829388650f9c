"""Governance values: quotas and their usage (feature row B12), retention and legal holds (B5).

A :class:`Quota` limits one scope: a whole mandate (``feature_instance_id``
``None``: every file of the mandate counts) or one feature instance of it.
A file counts against the quota of its mandate and, when it has one, of its
feature instance. Usage is kept beside the limits by the metadata adapters,
in the transaction that adds, changes or removes a FileItem, so concurrent
writers can never overshoot (ADR 0090). A reused duplicate adds no FileItem
and counts nothing.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from docbinder.domain.errors import InvalidInput, QuotaExceeded
from docbinder.domain.model import Scope

MAX_QUOTA_VALUE = 2**62
"""Largest limit or usage a quota holds (fits a signed 64-bit column on every backend)."""


def _check_limit(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if type(value) is not int or not 0 <= value <= MAX_QUOTA_VALUE:
        raise InvalidInput(
            f"{attribute.name} must be a whole number from 0 to {MAX_QUOTA_VALUE} or None"
        )


def _check_usage(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or not -MAX_QUOTA_VALUE <= value <= MAX_QUOTA_VALUE:
        raise InvalidInput(f"{attribute.name} must be a whole number")


def scope_label(scope: Scope) -> str:
    """``mandate M`` or ``mandate M, feature instance F``: how messages name a scope."""
    if scope.feature_instance_id is None:
        return f"mandate {scope.mandate_id}"
    return f"mandate {scope.mandate_id}, feature instance {scope.feature_instance_id}"


def quota_scopes(scope: Scope) -> tuple[Scope, ...]:
    """The scopes whose quotas a file of ``scope`` counts against: its mandate, then its feature instance."""
    mandate = Scope(scope.mandate_id)
    return (mandate,) if scope.feature_instance_id is None else (mandate, scope)


@attrs.frozen
class Quota:
    """Limits of one scope and what it uses now (B12).

    ``max_bytes`` (bytes of all files together), ``max_files`` (number of
    FileItems) and ``max_file_size`` (bytes of one file) are each ``None`` for
    no limit. ``used_bytes`` / ``used_files`` are the scope's FileItems as the
    metadata store counts them (every FileItem of the mandate for a
    mandate-level quota; of the feature instance otherwise).
    """

    scope: Scope = attrs.field(validator=attrs.validators.instance_of(Scope))
    max_bytes: int | None = attrs.field(default=None, validator=_check_limit)
    max_files: int | None = attrs.field(default=None, validator=_check_limit)
    max_file_size: int | None = attrs.field(default=None, validator=_check_limit)
    used_bytes: int = attrs.field(default=0, validator=_check_usage)
    used_files: int = attrs.field(default=0, validator=_check_usage)

    def check_add(self, size: int, files: int = 1, *, file_size: int | None = None) -> None:
        """Raise :class:`QuotaExceeded` unless ``files`` more FileItems of ``size`` bytes fit.

        ``size`` is the bytes added (of one file when ``files`` is 1; a content
        update passes the growth, ``files=0`` and the file's new size as
        ``file_size``). Checked: ``max_file_size`` (against ``file_size``, which
        is ``size`` for an add), then ``max_files``, then ``max_bytes``. The
        message names the quota, the usage and what frees room, for a person
        and for a model.
        """
        where = scope_label(self.scope)
        one = size if files and file_size is None else file_size
        if one is not None and self.max_file_size is not None and one > self.max_file_size:
            raise QuotaExceeded(
                f"quota exceeded for {where}: max-file-size is {self.max_file_size} bytes "
                f"and this file would have {one} bytes; store a smaller file or ask an "
                "administrator to raise the quota (docbinder quota set)",
                quota="max_file_size",
                limit=self.max_file_size,
                used=one,
            )
        if files and self.max_files is not None and self.used_files + files > self.max_files:
            raise QuotaExceeded(
                f"quota exceeded for {where}: max-files is {self.max_files} and "
                f"{self.used_files} files are stored; delete files no longer needed "
                "(docbinder files rm) or ask an administrator to raise the quota "
                "(docbinder quota set)",
                quota="max_files",
                limit=self.max_files,
                used=self.used_files,
            )
        if size > 0 and self.max_bytes is not None and self.used_bytes + size > self.max_bytes:
            raise QuotaExceeded(
                f"quota exceeded for {where}: max-bytes is {self.max_bytes} bytes, "
                f"{self.used_bytes} bytes are used and this needs {size} more; delete files "
                "no longer needed (docbinder files rm) or ask an administrator to raise the "
                "quota (docbinder quota set)",
                quota="max_bytes",
                limit=self.max_bytes,
                used=self.used_bytes,
            )

    def charged(self, size: int, files: int) -> Quota:
        """This quota with ``size`` bytes and ``files`` FileItems more used (negative: fewer)."""
        return attrs.evolve(
            self, used_bytes=self.used_bytes + size, used_files=self.used_files + files
        )


_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhdw]?)\s*$", re.ASCII)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(value: object) -> timedelta:
    """A positive duration from ``30d``, ``12h``, ``15m``, ``2s``, ``1w`` or a number of seconds.

    Units: ``s`` seconds, ``m`` minutes, ``h`` hours, ``d`` days (86,400 s),
    ``w`` weeks; no unit is seconds. Raises :class:`InvalidInput` otherwise.
    """
    if isinstance(value, bool):
        raise InvalidInput(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if match is None:
            raise InvalidInput(f"not a duration: {value!r} (use e.g. 2s, 12h, 30d)")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if not seconds > 0:  # NaN included
        raise InvalidInput(f"a duration must be positive, got {value!r}")
    if not seconds < 10**10:
        raise InvalidInput(
            f"a duration must be under 10**10 seconds (about 316 years), got {value!r}"
        )
    return timedelta(seconds=seconds)


def duration_text(duration: timedelta) -> str:
    """``duration`` in the largest unit of :func:`parse_duration` that gives a whole number: ``30d``, ``90m``, ``2s``.

    ``parse_duration(duration_text(d)) == d`` for every whole number of
    seconds; a fraction of a second is given in seconds (``1.5s``).
    """
    seconds = duration.total_seconds()
    for unit in ("w", "d", "h", "m"):
        size = _UNIT_SECONDS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{seconds:g}s"


class RetentionBasis(enum.StrEnum):
    """What a retention period counts from: the FileItem's creation or its last read."""

    CREATED = "created"
    LAST_READ = "last_read"


@attrs.frozen
class RetentionPolicy:
    """How long FileItems of a scope are kept (feature row B5).

    A file of scope ``Scope(m, f)`` follows the policy of its feature instance
    when there is one, else that of its mandate. It expires ``max_age`` after
    its creation (``CREATED``) or after its last read (``LAST_READ``, the
    reads the audit log recorded; its creation when never read).

    ``set_at`` is when the policy was set (UTC; ``None``: not known). A
    ``LAST_READ`` policy counts from ``set_at`` at the earliest: reads made
    before it existed may not be in the log yet (a running process appends
    them in batches) or at all (the log was off), so their absence proves
    nothing, and no file expires sooner than ``max_age`` after the policy was
    set (ADR 0142 addendum). A ``CREATED`` policy needs no reads and ignores it.
    """

    scope: Scope = attrs.field(validator=attrs.validators.instance_of(Scope))
    max_age: timedelta = attrs.field(validator=attrs.validators.instance_of(timedelta))
    basis: RetentionBasis = attrs.field(default=RetentionBasis.CREATED, converter=RetentionBasis)
    set_at: datetime | None = attrs.field(default=None, kw_only=True)

    @max_age.validator
    def _positive(self, _attribute: attrs.Attribute[Any], value: timedelta) -> None:
        if value < timedelta(seconds=1) or value.microseconds:
            raise InvalidInput("max_age must be a whole number of seconds, at least 1 s")

    def expires_at(self, created_at: datetime, last_read_at: datetime | None = None) -> datetime:
        """When a file created at ``created_at`` (last read at ``last_read_at``) expires."""
        start = created_at
        if self.basis is RetentionBasis.LAST_READ:
            if last_read_at is not None:
                start = max(start, last_read_at)
            if self.set_at is not None:
                start = max(start, self.set_at)
        return start + self.max_age

    def expires_nothing_by(self, moment: datetime) -> bool:
        """Whether no file of this policy can have expired by ``moment``: a ``LAST_READ`` policy set less than ``max_age`` before it."""
        return (
            self.basis is RetentionBasis.LAST_READ
            and self.set_at is not None
            and self.set_at + self.max_age > moment
        )


def policy_for(scope: Scope, policies: Sequence[RetentionPolicy]) -> RetentionPolicy | None:
    """The policy a file of ``scope`` follows among ``policies``: its feature instance's, else its mandate's."""
    by_scope = {p.scope: p for p in policies}
    if scope.feature_instance_id is not None and scope in by_scope:
        return by_scope[scope]
    return by_scope.get(Scope(scope.mandate_id))


class HoldKind(enum.StrEnum):
    """What a legal hold keeps: one file, or every file a workflow's documents point at."""

    FILE = "file"
    WORKFLOW = "workflow"


@attrs.frozen
class LegalHold:
    """A legal hold (B5): while it stands, the file (or the workflow's files) never expire.

    ``mandate_id`` is the tenant it was placed in; ``reason`` a short note;
    ``placed_at`` when (UTC).
    """

    kind: HoldKind = attrs.field(converter=HoldKind)
    target_id: str
    mandate_id: str
    reason: str = ""
    placed_at: datetime | None = None
