"""What one read call may spend, and how its caller says it is gone (SPEC C8, C10).

A *read call* is one consuming-tool call (``read_documents``,
``search_in_file_content``, ``read_file``) or one ``get_content``: it reads one
or more documents. :class:`ReadLimits` bound the whole call (seconds, bytes
returned, parts returned) across its documents, on top of the extractor's
budgets per document. :class:`ReadCall` is the running account of one call:
what it spent, its deadline, the scope its cache entries belong to and a
:class:`CancelToken` that the caller's side sets when the caller is gone (an
``await`` cancelled, an MCP request closed).

The call in progress is held in a :class:`contextvars.ContextVar`
(:func:`current_read_call`), so an extractor several layers down (behind a
port whose signature stays ``extract(document_id, item, chunks)``) can shorten
its deadline to what the call has left and stop when the caller is gone.
Worker threads get the caller's token through :func:`cancellation`.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs

from docbinder.domain.errors import InvalidInput

DEFAULT_CALL_TIME_BUDGET: Final = 60.0
"""Default seconds one read call may spend on its documents."""

DEFAULT_CALL_MAX_BYTES: Final = 64 * 1024 * 1024
"""Default bytes of content one read call returns (text characters plus data bytes, 64 MiB)."""

DEFAULT_CALL_MAX_PARTS: Final = 1000
"""Default content parts one read call returns."""


def _positive_int(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: object, _attribute: object, value: object) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidInput(f"{name} must be a whole number >= 1, got {value!r}")

    return check


def _positive_seconds(_instance: object, _attribute: object, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not (value > 0):
        raise InvalidInput(f"time_budget must be a positive number of seconds, got {value!r}")
    if value == float("inf"):
        raise InvalidInput("time_budget must be finite")


@attrs.frozen
class ReadLimits:
    """The budget of one read call across all its documents.

    ``time_budget`` seconds (wall clock, from the start of the call);
    ``max_bytes`` bytes of content returned (a text part counts its
    characters, an image or binary part the bytes of its ``data``);
    ``max_parts`` content parts returned. Raises
    :class:`~docbinder.domain.errors.InvalidInput` for a value below 1 (or
    a time that is not a positive finite number).
    """

    time_budget: float = attrs.field(default=DEFAULT_CALL_TIME_BUDGET, validator=_positive_seconds)
    max_bytes: int = attrs.field(
        default=DEFAULT_CALL_MAX_BYTES,
        validator=_positive_int("max_bytes"),
    )
    max_parts: int = attrs.field(
        default=DEFAULT_CALL_MAX_PARTS,
        validator=_positive_int("max_parts"),
    )


class CancelToken:
    """Set once when the caller of a read call is gone; thread-safe.

    ``reason`` is the sentence reported for the work that stopped, e.g.
    ``"the caller is gone (its request was cancelled)"``.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = "the caller is gone"

    def cancel(self, reason: str | None = None) -> None:
        """Mark the call cancelled (idempotent; the first reason stays)."""
        if not self._event.is_set():
            if reason is not None:
                self.reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for cancellation; ``True`` if the call was cancelled."""
        return self._event.wait(max(0.0, seconds))


_token: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar(
    "docbinder_cancel_token", default=None
)
_call: contextvars.ContextVar[ReadCall | None] = contextvars.ContextVar(
    "docbinder_read_call", default=None
)


@contextlib.contextmanager
def cancellation(token: CancelToken) -> Iterator[CancelToken]:
    """Make ``token`` the cancel token of the read calls started inside the block."""
    reset = _token.set(token)
    try:
        yield token
    finally:
        _token.reset(reset)


def current_cancel_token() -> CancelToken | None:
    """The cancel token set by :func:`cancellation` around this code, or ``None``."""
    return _token.get()


def scope_key(mandate_id: str, user_id: str, feature_instance_id: str | None = None) -> str:
    """The cache scope of a principal: 32 hex digits of SHA-256 over mandate, user id and
    feature instance.

    Entries of the extraction cache are kept per scope, so one principal's
    read never finds (or times) another principal's entry (ADR 0008's promise).
    The feature instance is part of it because its data is hidden from the
    same user id in another feature instance (an ADK app's ``user`` is not
    another app's); without one the key is the mandate and user id's alone,
    as before.
    """
    raw = f"{len(mandate_id)}:{mandate_id}/{user_id}"
    if feature_instance_id is not None:
        raw += f"\n{feature_instance_id}"  # no user id holds a line break: unambiguous
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class ReadCall:
    """The running account of one read call (see the module documentation).

    ``limits`` its :class:`ReadLimits`; ``scope`` the cache scope
    (:func:`scope_key`, ``None``: unscoped); ``token`` the caller's
    :class:`CancelToken` (a fresh one when none is given). ``deadline`` is a
    :func:`time.monotonic` value. Not shared between threads except through
    ``token``.
    """

    def __init__(
        self,
        limits: ReadLimits,
        *,
        scope: str | None = None,
        token: CancelToken | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.scope = scope
        self.token = token if token is not None else CancelToken()
        self._clock = clock
        self.started = self._now()
        self.deadline = self.started + limits.time_budget
        self.spent_bytes = 0
        self.spent_parts = 0

    def _now(self) -> float:
        return self._clock()

    def remaining_seconds(self) -> float:
        """Seconds left before the call's deadline (0.0 once it passed)."""
        return max(0.0, self.deadline - self._now())

    def stop_reason(self) -> str | None:
        """Why no further document may be read in this call, or ``None``.

        The caller gone, the time spent, the bytes or the parts spent.
        """
        if self.token.cancelled:
            return f"not read: {self.token.reason}"
        if self.remaining_seconds() <= 0:
            return (
                f"not read: this call's time budget of {self.limits.time_budget:g} s was spent "
                "on the documents before it; ask for it in another call"
            )
        if self.spent_bytes >= self.limits.max_bytes:
            return (
                f"not read: this call already returns {self.spent_bytes} bytes of content, its "
                f"limit of {self.limits.max_bytes} bytes; ask for it in another call"
            )
        if self.spent_parts >= self.limits.max_parts:
            return (
                f"not read: this call already returns {self.spent_parts} content parts, its "
                f"limit of {self.limits.max_parts}; ask for it in another call"
            )
        return None

    def over_budget(self, size: int, parts: int) -> str | None:
        """Why a document of ``size`` bytes in ``parts`` parts does not fit what is left, or ``None``.

        A document that alone exceeds a limit is told so, with the setting: another
        call would not return it either.
        """
        if size > self.limits.max_bytes:
            return (
                f"not returned: its content ({size} bytes) is more than any call may return "
                f"under the limit of {self.limits.max_bytes} bytes (setting call_max_bytes); "
                "another call would not return it either"
            )
        if parts > self.limits.max_parts:
            return (
                f"not returned: its {parts} content parts are more than any call may return "
                f"under the limit of {self.limits.max_parts} parts (setting call_max_parts); "
                "another call would not return it either"
            )
        if self.spent_bytes + size > self.limits.max_bytes:
            return (
                f"not returned: its content ({size} bytes) would take this call past its limit "
                f"of {self.limits.max_bytes} bytes ({self.spent_bytes} already returned); "
                "ask for it in another call"
            )
        if self.spent_parts + parts > self.limits.max_parts:
            return (
                f"not returned: its {parts} content parts would take this call past its limit "
                f"of {self.limits.max_parts} parts ({self.spent_parts} already returned); "
                "ask for it in another call"
            )
        return None

    def spend(self, size: int, parts: int) -> None:
        """Count ``size`` bytes and ``parts`` parts as returned."""
        self.spent_bytes += size
        self.spent_parts += parts


def current_read_call() -> ReadCall | None:
    """The read call in progress around this code, or ``None``."""
    return _call.get()


@contextlib.contextmanager
def read_call(limits: ReadLimits, *, scope: str | None = None) -> Iterator[ReadCall]:
    """The read call in progress, or a new one with ``limits`` and ``scope`` for the block.

    An enclosing call (a tool call around a ``get_content``) is reused, so its
    budget spans everything it reads; a new call takes the cancel token of
    :func:`cancellation`, if any.
    """
    outer = _call.get()
    if outer is not None:
        yield outer
        return
    call = ReadCall(limits, scope=scope, token=current_cancel_token())
    reset = _call.set(call)
    try:
        yield call
    finally:
        _call.reset(reset)
